import { bullmqEnqueue, bullmqWorker } from './bullmq.js';
import { graphileEnqueue, graphileWorker } from './graphile.js';
import { jobSender, peerJob } from './job.js';

// One peer's worker in a process of its own (as Herald's worker is), so its CPU time is its own. The bench
// drives it over IPC: `enqueue` fills the queue with PEER_COUNT jobs (untimed), `start` starts the worker
// and notes the time and the CPU used so far, `finish` answers with the CPU used since `start`, then stops
// the worker and exits. Without PEER_COUNT the queue is the bench's to fill (it adds jobs as they are
// emitted, each with its endpoint's URL).
//
// Environment: PEER (bullmq | graphile-worker), PEER_COUNT, PEER_URL (the endpoint of jobs without one),
// PEER_CONCURRENCY, PEER_REDIS_PREFIX (bullmq), PEER_DATABASE_URL (graphile-worker).

type Command = { cmd: 'enqueue' | 'start' | 'finish' };

const peer = process.env.PEER;
const count = Number(process.env.PEER_COUNT ?? 0);
const concurrency = Number(process.env.PEER_CONCURRENCY);
const url = process.env.PEER_URL ?? '';
const prefix = process.env.PEER_REDIS_PREFIX ?? '';
const databaseUrl = process.env.PEER_DATABASE_URL ?? '';
if ((peer !== 'bullmq' && peer !== 'graphile-worker') || !(count >= 0) || !(concurrency > 0) || !url) {
  console.error('peer child: PEER, PEER_CONCURRENCY and PEER_URL are required, and PEER_COUNT is a count');
  process.exit(2);
}

const sender = jobSender(url, concurrency);
let worker: { close(): Promise<void> } | null = null;
let cpuAtStart: NodeJS.CpuUsage | null = null;

async function handle(message: Command): Promise<Record<string, unknown>> {
  switch (message.cmd) {
    case 'enqueue': {
      const createdAt = Date.now();
      const jobs = Array.from({ length: count }, (_, n) => peerJob(n, createdAt));
      if (peer === 'bullmq') await bullmqEnqueue(prefix, jobs);
      else await graphileEnqueue(databaseUrl, jobs);
      return {};
    }
    case 'start': {
      const at = performance.timeOrigin + performance.now();
      cpuAtStart = process.cpuUsage();
      worker =
        peer === 'bullmq'
          ? bullmqWorker(prefix, concurrency, sender)
          : await graphileWorker(databaseUrl, concurrency, sender);
      return { at };
    }
    case 'finish': {
      const used = process.cpuUsage(cpuAtStart ?? undefined);
      return { cpuMs: (used.user + used.system) / 1000 };
    }
  }
}

async function stop(code: number): Promise<never> {
  await worker?.close().catch((error) => console.error('peer child: closing the worker:', error));
  await sender.close().catch(() => {});
  process.exit(code);
}

process.on('message', (raw) => {
  const message = raw as Command;
  handle(message).then(
    // After `finish` is answered, the worker stops and the process exits.
    (reply) => process.send?.({ type: message.cmd, ...reply }, () => message.cmd === 'finish' && void stop(0)),
    (error) => {
      console.error(`peer child: ${message.cmd} failed:`, error);
      process.send?.({ type: 'error', cmd: message.cmd, error: String((error as Error).message ?? error) });
    },
  );
});
process.on('SIGTERM', () => void stop(0));
process.on('disconnect', () => void stop(1));
process.send?.({ type: 'ready' });
