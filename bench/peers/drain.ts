import { randomBytes } from 'node:crypto';
import { createDatabase } from '../lib/pg.js';
import { benchFile, onCleanup, spawnNode, type Child } from '../lib/procs.js';
import { drainFigures, type DrainFigures, LEFT_OUT } from '../lib/drain.js';
import { commandCpuMs, processCpuMs } from '../lib/cpu.js';
import type { Context } from '../lib/context.js';
import { removeKeys } from './bullmq.js';

// The bench side of a peer's drain (bench/peers/child.ts): a fresh queue (a Redis key prefix of its own, or
// a throwaway PostgreSQL database), the backlog enqueued with the worker off, then the worker started and
// timed to the last arrival at the receiver, as Herald's drain is timed. The queue is removed after.

export type Peer = 'bullmq' | 'graphile-worker';

export interface PeerRun extends DrainFigures {
  /** CPU time of the peer's process from the worker's start to the last arrival, ms. */
  cpuMs: number;
  /** The same over the last 80% of arrivals (every thread, read from /proc as for Herald's workers). */
  cpuMsLast80: number;
  /** CPU time of the store's server processes (redis-server, or every postgres process) over the same window. */
  serverCpuMsLast80: number;
  peak: number;
  /** Where its queue was: the Redis key prefix, or the PostgreSQL database's name (both gone now). */
  queue: string;
}

const ENQUEUE_LIMIT_MS = 120_000;

export async function peerDrain(
  ctx: Context,
  peer: Peer,
  count: number,
  concurrency: number,
  limitMs: number,
): Promise<PeerRun> {
  const env: Record<string, string> = {
    PEER: peer,
    PEER_COUNT: String(count),
    PEER_CONCURRENCY: String(concurrency),
    PEER_URL: `${ctx.receiver.url}/delivery/0`,
    // graphile-worker's documented switch for its per-job success log line.
    NO_LOG_SUCCESS: '1',
  };
  let removeQueue: () => Promise<void>;
  let queue: string;
  if (peer === 'bullmq') {
    const prefix = `herald-bench-${randomBytes(4).toString('hex')}`;
    queue = prefix;
    env.PEER_REDIS_PREFIX = prefix;
    let removed = false;
    removeQueue = async () => {
      if (removed) return;
      removed = true;
      await removeKeys(prefix);
    };
    onCleanup(removeQueue);
  } else {
    const database = await createDatabase('peer');
    env.PEER_DATABASE_URL = database.url;
    queue = new URL(database.url).pathname.slice(1);
    removeQueue = database.drop;
  }
  const child = spawnNode({
    name: `peer-${peer}`,
    script: benchFile('peers', 'child.js'),
    env,
    ipc: true,
    logDir: ctx.logDir,
  });
  try {
    await reply(child, 'ready', 30_000);
    ctx.log(`  ${peer}: enqueuing ${count} with the worker off`);
    child.proc.send({ cmd: 'enqueue' });
    await reply(child, 'enqueue', ENQUEUE_LIMIT_MS);
    await ctx.receiver.reset();
    child.proc.send({ cmd: 'start' });
    const { at: startedAt } = await reply(child, 'start', 30_000);
    await ctx.receiver.waitFor(Math.floor(count * LEFT_OUT) + 1, limitMs).catch(() => null);
    const server = peer === 'bullmq' ? 'redis-server' : 'postgres';
    const cpuAtFifth = processCpuMs(child.proc.pid!);
    const serverAtFifth = commandCpuMs(server);
    const last = await ctx.receiver.waitFor(count, limitMs).catch(() => null);
    const cpuMsLast80 = processCpuMs(child.proc.pid!) - cpuAtFifth;
    const serverCpuMsLast80 = commandCpuMs(server) - serverAtFifth;
    child.proc.send({ cmd: 'finish' });
    const { cpuMs } = await reply(child, 'finish', 10_000);
    const figures = await drainFigures(ctx, count, startedAt as number, last, limitMs);
    await Promise.race([child.exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
    return { ...figures, cpuMs: cpuMs as number, cpuMsLast80, serverCpuMsLast80, peak: child.peakRss(), queue };
  } finally {
    await child.stop();
    await removeQueue();
  }
}

/** The child's next message of this type; rejects on its error message, its exit or the time limit. */
function reply(child: Child, type: string, timeoutMs: number): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const done = (error: Error | null, message?: Record<string, unknown>) => {
      clearTimeout(timer);
      child.proc.off('message', onMessage);
      child.proc.off('exit', onExit);
      if (error) reject(error);
      else resolve(message!);
    };
    const onMessage = (raw: unknown) => {
      const message = raw as Record<string, unknown>;
      if (message.type === type) done(null, message);
      else if (message.type === 'error') done(new Error(`${child.name}: ${message.cmd}: ${message.error}`));
    };
    const onExit = (code: number | null) =>
      done(new Error(`${child.name} exited (${code}) waiting for ${type}; see ${child.logFile}`));
    const timer = setTimeout(
      () => done(new Error(`${child.name}: no ${type} in ${timeoutMs / 1000}s; see ${child.logFile}`)),
      timeoutMs,
    );
    child.proc.on('message', onMessage);
    child.proc.once('exit', onExit);
  });
}
