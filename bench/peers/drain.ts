import { drainFigures, type DrainFigures, LEFT_OUT } from '../lib/drain.js';
import { commandCpuMs, processCpuMs } from '../lib/cpu.js';
import type { Context } from '../lib/context.js';
import { perDelivery, settledTableWork, type TableWorkPerDelivery } from '../lib/table-work.js';
import { startPeer, type Peer } from './process.js';

// A peer's drain: its worker process on a fresh queue (process.ts), the backlog enqueued with the worker
// off, then the worker started and timed to the last arrival at the receiver, as Herald's drain is timed.
// The queue is removed after. With `tables`, graphile-worker's database's table counters are read, settled,
// before its worker starts and once it has stopped after the last arrival, as Herald's are (lib/table-work.ts).

export type { Peer };

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
  /** graphile-worker's rows written per delivery over the whole drain, when asked for. */
  tableWork?: TableWorkPerDelivery;
}

const ENQUEUE_LIMIT_MS = 120_000;

export async function peerDrain(
  ctx: Context,
  peer: Peer,
  count: number,
  concurrency: number,
  limitMs: number,
  tables = false,
): Promise<PeerRun> {
  const worker = await startPeer(ctx, peer, { concurrency, url: `${ctx.receiver.url}/delivery/0`, count });
  const { child } = worker;
  try {
    ctx.log(`  ${peer}: enqueuing ${count} with the worker off`);
    await worker.ask('enqueue', ENQUEUE_LIMIT_MS);
    const measured = tables && peer === 'graphile-worker' ? worker.queue : null;
    const before = measured ? await settledTableWork(measured) : null;
    await ctx.receiver.reset();
    const { at: startedAt } = await worker.ask('start', 30_000);
    await ctx.receiver.waitFor(Math.floor(count * LEFT_OUT) + 1, limitMs).catch(() => null);
    const server = peer === 'bullmq' ? 'redis-server' : 'postgres';
    const cpuAtFifth = processCpuMs(child.pid);
    const serverAtFifth = commandCpuMs(server);
    const last = await ctx.receiver.waitFor(count, limitMs).catch(() => null);
    const cpuMsLast80 = processCpuMs(child.pid) - cpuAtFifth;
    const serverCpuMsLast80 = commandCpuMs(server) - serverAtFifth;
    const { cpuMs } = await worker.ask('finish', 10_000);
    const figures = await drainFigures(ctx, count, startedAt as number, last, limitMs);
    await Promise.race([child.exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
    // Its process has exited, its last completions written: its backends report their last counters as they close.
    const tableWork =
      measured && before ? perDelivery(before, await settledTableWork(measured), figures.delivered) : undefined;
    const queue = peer === 'bullmq' ? worker.queue : new URL(worker.queue).pathname.slice(1);
    return {
      ...figures,
      cpuMs: cpuMs as number,
      cpuMsLast80,
      serverCpuMsLast80,
      peak: child.peakRss(),
      queue,
      ...(tableWork ? { tableWork } : {}),
    };
  } finally {
    await worker.close();
  }
}
