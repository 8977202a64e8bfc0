import { createDatabase } from '../lib/pg.js';
import { round } from '../lib/stats.js';
import { mb, target, type Context, type ScenarioResult } from '../lib/context.js';
import { redisAvailable, REDIS_URL } from '../peers/bullmq.js';
import { peerDrain, type PeerRun } from '../peers/drain.js';
import { DRAIN_LIMIT_MS, drain, ENDPOINT_CONCURRENCY, rawUndici, type DeliveryRun } from './delivery.js';
import { fastest } from './common.js';

// Herald's worker beside two queues an application could deliver its webhooks with instead: BullMQ on
// Redis and graphile-worker on PostgreSQL. Each contender drains the same backlog of signed POSTs to the
// same receiver endpoint at the same number in flight; they take turns, and the better run of each counts.

/** Microseconds of process CPU per delivery. */
const cpuUs = (cpuMs: number, deliveries: number) => round((cpuMs * 1000) / deliveries, 0);
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

/** Herald's drain on PostgreSQL in a database of its own, dropped after. */
async function pgDrain(ctx: Context, label: string, count: number, workers: number): Promise<DeliveryRun> {
  const database = await createDatabase(label);
  try {
    return await drain(ctx, label, count, workers, database.url);
  } finally {
    await database.drop();
  }
}

export async function peers(ctx: Context): Promise<ScenarioResult> {
  if (!(await redisAvailable())) throw new Error(`Redis is not reachable on ${REDIS_URL}`);
  const count = ctx.sizes.peerDeliveries;
  const rounds = ctx.quick ? 1 : 2;
  const sqlite: DeliveryRun[] = [];
  const pg1: DeliveryRun[] = [];
  const pg2: DeliveryRun[] = [];
  const bullmq: PeerRun[] = [];
  const graphile: PeerRun[] = [];
  const raws: number[] = [];
  for (let turn = 0; turn < rounds; turn++) {
    ctx.log('  Herald, SQLite, 1 worker');
    sqlite.push(await drain(ctx, 'peers-sqlite', count, 1));
    ctx.log('  BullMQ');
    bullmq.push(await peerDrain(ctx, 'bullmq', count, ENDPOINT_CONCURRENCY, DRAIN_LIMIT_MS));
    ctx.log('  raw undici');
    raws.push(await rawUndici(ctx, count));
    ctx.log('  Herald, PostgreSQL, 1 worker');
    pg1.push(await pgDrain(ctx, 'peers1', count, 1));
    ctx.log('  graphile-worker');
    graphile.push(await peerDrain(ctx, 'graphile-worker', count, ENDPOINT_CONCURRENCY, DRAIN_LIMIT_MS));
    ctx.log('  Herald, PostgreSQL, 2 workers');
    pg2.push(await pgDrain(ctx, 'peers2', count, 2));
  }
  const [s, p1, p2, b, g] = [fastest(sqlite), fastest(pg1), fastest(pg2), fastest(bullmq), fastest(graphile)];
  const raw = Math.max(...raws);
  const ratios = {
    sqliteVsBullmq: round(s.rate / b.rate),
    sqliteVsRawUndici: round(s.rate / raw),
    pg1WorkerVsGraphileWorker: round(p1.rate / g.rate),
    pg1WorkerVsBullmq: round(p1.rate / b.rate),
    pg2WorkersVs1Worker: round(p2.rate / p1.rate),
  };
  const peak = Math.max(...[...sqlite, ...pg1, ...pg2].map((r) => r.peak));
  const runs = (list: { rate: number }[]) => list.map((r) => r.rate).join(' / ');
  return {
    name: 'peers',
    title: 'Delivery from a backlog beside BullMQ and graphile-worker (SQLite and PostgreSQL)',
    store: 'postgres',
    figures: {
      deliveries: count,
      sqliteDeliveriesPerSec: s.rate,
      sqliteCpuUsPerDelivery: cpuUs(sum(s.workerCpuMs), s.delivered),
      pg1WorkerDeliveriesPerSec: p1.rate,
      pg1WorkerCpuUsPerDelivery: cpuUs(sum(p1.workerCpuMs), p1.delivered),
      pg2WorkersDeliveriesPerSec: p2.rate,
      pg2WorkersCpuUsPerDelivery: cpuUs(sum(p2.workerCpuMs), p2.delivered),
      pg2WorkersBusiestWorkerCpuShare: round(Math.max(...p2.workerCpuMs) / sum(p2.workerCpuMs)),
      delivered: Math.min(s.delivered, p1.delivered, p2.delivered),
    },
    baseline: {
      bullmqDeliveriesPerSec: b.rate,
      bullmqCpuUsPerDelivery: cpuUs(b.cpuMs, b.delivered),
      bullmqStartupMs: b.startupMs,
      bullmqPeakRssMb: mb(Math.max(...bullmq.map((r) => r.peak))),
      graphileWorkerDeliveriesPerSec: g.rate,
      graphileWorkerCpuUsPerDelivery: cpuUs(g.cpuMs, g.delivered),
      graphileWorkerStartupMs: g.startupMs,
      graphileWorkerPeakRssMb: mb(Math.max(...graphile.map((r) => r.peak))),
      rawUndiciDeliveriesPerSec: raw,
      peersDelivered: Math.min(b.delivered, g.delivered),
    },
    ratios,
    peakRssMb: mb(peak),
    targets: [
      target('SQLite delivery vs BullMQ', '>= 1.0x', ratios.sqliteVsBullmq, ratios.sqliteVsBullmq >= 1),
      target(
        'SQLite delivery vs raw undici (peers run)',
        '>= 0.50x',
        ratios.sqliteVsRawUndici,
        ratios.sqliteVsRawUndici >= 0.5,
      ),
      target(
        'PostgreSQL delivery (1 worker) vs graphile-worker',
        '>= 2.0x',
        ratios.pg1WorkerVsGraphileWorker,
        ratios.pg1WorkerVsGraphileWorker >= 2,
      ),
      target(
        'PostgreSQL delivery (1 worker) vs BullMQ',
        '>= 0.60x',
        ratios.pg1WorkerVsBullmq,
        ratios.pg1WorkerVsBullmq >= 0.6,
      ),
      target(
        'PostgreSQL delivery, 2 workers vs 1',
        '> 1.0x',
        ratios.pg2WorkersVs1Worker,
        ratios.pg2WorkersVs1Worker > 1,
      ),
    ],
    notes: [
      `${count} deliveries to one endpoint from a backlog, ${ENDPOINT_CONCURRENCY} in flight per worker process (Herald: HERALD_ENDPOINT_CONCURRENCY; BullMQ: concurrency; graphile-worker: concurrency), undici with ${ENDPOINT_CONCURRENCY} connections; rates from the first arrival to the last`,
      "CPU per delivery: user + system time of the worker processes only (Herald: every worker process, summed; peers: their one process), from the worker's start to the last arrival; Redis and PostgreSQL server time is not in it",
      `the better of ${rounds} turns each: Herald SQLite ${runs(sqlite)}, PostgreSQL 1 worker ${runs(pg1)}, 2 workers ${runs(pg2)}; BullMQ ${runs(bullmq)}; graphile-worker ${runs(graphile)}; raw undici ${raws.join(' / ')} deliveries/s`,
      `BullMQ 6: one Worker, concurrency ${ENDPOINT_CONCURRENCY}, removeOnComplete {count: 0}, removeOnFail {count: 5000}; graphile-worker 0.17: concurrency ${ENDPOINT_CONCURRENCY}, maxPoolSize ${ENDPOINT_CONCURRENCY + 1}, localQueue 500, completeJobBatchDelay 0, failJobBatchDelay 0, NO_LOG_SUCCESS`,
    ],
    seconds: 0,
  };
}
