import { createDatabase } from '../lib/pg.js';
import { round } from '../lib/stats.js';
import { mb, target, type Context, type ScenarioResult } from '../lib/context.js';
import { redisAvailable, REDIS_URL } from '../peers/bullmq.js';
import { peerDrain, type PeerRun } from '../peers/drain.js';
import { DRAIN_LIMIT_MS, drain, ENDPOINT_CONCURRENCY, rawUndici, type DeliveryRun } from './delivery.js';
import { LEFT_OUT } from '../lib/drain.js';
import type { TableWorkPerDelivery } from '../lib/table-work.js';

// Herald's worker beside two queues an application could deliver its webhooks with instead: BullMQ on
// Redis and graphile-worker on PostgreSQL. Each contender drains the same backlog of signed POSTs to the
// same receiver endpoint at the same number in flight; they take turns, and the better run of each counts.
// On PostgreSQL, Herald's drains and graphile-worker's also count the rows each writes per delivery.

/** Microseconds of process CPU per delivery. */
const cpuUs = (cpuMs: number, deliveries: number) => round((cpuMs * 1000) / deliveries, 0);
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

/** PostgreSQL's rows per delivery as figures: `<prefix>RowsWrittenPerDelivery`, `…InsertedPerDelivery`, …. */
const rowFigures = (prefix: string, work: TableWorkPerDelivery | undefined): Record<string, number> => ({
  [`${prefix}RowsWrittenPerDelivery`]: work?.rowsWritten ?? Number.NaN,
  [`${prefix}InsertedPerDelivery`]: work?.inserted ?? Number.NaN,
  [`${prefix}HotUpdatesPerDelivery`]: work?.hotUpdated ?? Number.NaN,
  [`${prefix}NonHotUpdatesPerDelivery`]: work?.nonHotUpdated ?? Number.NaN,
  [`${prefix}DeletedPerDelivery`]: work?.deleted ?? Number.NaN,
});

/** Herald's drain on PostgreSQL in a database of its own, dropped after, its table counters read. */
async function pgDrain(ctx: Context, label: string, count: number, workers: number): Promise<DeliveryRun> {
  const database = await createDatabase(label);
  try {
    return await drain(ctx, label, count, workers, database.url, true);
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
    graphile.push(await peerDrain(ctx, 'graphile-worker', count, ENDPOINT_CONCURRENCY, DRAIN_LIMIT_MS, true));
    ctx.log('  Herald, PostgreSQL, 2 workers');
    pg2.push(await pgDrain(ctx, 'peers2', count, 2));
  }
  // Each contender's better turn by its steady rate (the last 80% of arrivals), on which the targets are judged.
  const steadiest = <T extends { rateLast80: number }>(runs: T[]) =>
    runs.reduce((best, run) => (run.rateLast80 > best.rateLast80 ? run : best));
  const [s, p1, p2, b, g] = [steadiest(sqlite), steadiest(pg1), steadiest(pg2), steadiest(bullmq), steadiest(graphile)];
  const raw = Math.max(...raws);
  const steadyCount = count - Math.floor(count * LEFT_OUT) - 1;
  const herald = (run: DeliveryRun) => ({
    cpu: cpuUs(sum(run.workerCpuMs), run.delivered),
    cpuLast80: cpuUs(sum(run.workerCpuMsLast80), steadyCount),
  });
  const [hs, hp1, hp2] = [herald(s), herald(p1), herald(p2)];
  // Total CPU over the last 80%, ms: the worker's and its store server's (on SQLite the store is in the worker).
  const totalMs = {
    sqlite: sum(s.workerCpuMsLast80),
    pg1: sum(p1.workerCpuMsLast80) + p1.serverCpuMsLast80,
    graphile: g.cpuMsLast80 + g.serverCpuMsLast80,
  };
  const [pg1Rows, graphileRows] = [rowFigures('pg1', p1.tableWork), rowFigures('graphileWorker', g.tableWork)];
  const fasterPeer = Math.max(b.rateLast80, g.rateLast80);
  const ratios = {
    pg1TotalCpuVsGraphileWorker: round(totalMs.pg1 / totalMs.graphile),
    sqliteTotalCpuVsGraphileWorker: round(totalMs.sqlite / totalMs.graphile),
    sqliteVsFasterPeer: round(s.rateLast80 / fasterPeer),
    sqliteVsBullmq: round(s.rateLast80 / b.rateLast80),
    sqliteVsRawUndici: round(s.rateLast80 / raw),
    pg1WorkerVsGraphileWorker: round(p1.rateLast80 / g.rateLast80),
    pg1WorkerVsBullmq: round(p1.rateLast80 / b.rateLast80),
    pg2WorkersVs1Worker: round(p2.rateLast80 / p1.rateLast80),
  };
  const peak = Math.max(...[...sqlite, ...pg1, ...pg2].map((r) => r.peak));
  const runs = (list: { rateLast80: number }[]) => list.map((r) => r.rateLast80).join(' / ');
  return {
    name: 'peers',
    title: 'Delivery from a backlog beside BullMQ and graphile-worker (SQLite and PostgreSQL)',
    store: 'postgres',
    figures: {
      deliveries: count,
      sqliteDeliveriesPerSecLast80: s.rateLast80,
      sqliteDeliveriesPerSec: s.rate,
      sqliteCpuUsPerDeliveryLast80: hs.cpuLast80,
      sqliteCpuUsPerDelivery: hs.cpu,
      pg1WorkerDeliveriesPerSecLast80: p1.rateLast80,
      pg1WorkerDeliveriesPerSec: p1.rate,
      pg1WorkerCpuUsPerDeliveryLast80: hp1.cpuLast80,
      pg1WorkerCpuUsPerDelivery: hp1.cpu,
      pg1ServerCpuUsPerDeliveryLast80: cpuUs(p1.serverCpuMsLast80, steadyCount),
      pg1TotalCpuUsPerDeliveryLast80: cpuUs(totalMs.pg1, steadyCount),
      sqliteTotalCpuUsPerDeliveryLast80: cpuUs(totalMs.sqlite, steadyCount),
      ...pg1Rows,
      pg2WorkersDeliveriesPerSecLast80: p2.rateLast80,
      pg2WorkersDeliveriesPerSec: p2.rate,
      pg2WorkersCpuUsPerDeliveryLast80: hp2.cpuLast80,
      pg2WorkersBusiestWorkerCpuShare: round(Math.max(...p2.workerCpuMs) / sum(p2.workerCpuMs)),
      delivered: Math.min(s.delivered, p1.delivered, p2.delivered),
    },
    baseline: {
      bullmqDeliveriesPerSecLast80: b.rateLast80,
      bullmqDeliveriesPerSec: b.rate,
      bullmqCpuUsPerDeliveryLast80: cpuUs(b.cpuMsLast80, steadyCount),
      bullmqCpuUsPerDelivery: cpuUs(b.cpuMs, b.delivered),
      bullmqServerCpuUsPerDeliveryLast80: cpuUs(b.serverCpuMsLast80, steadyCount),
      bullmqStartupMs: b.startupMs,
      bullmqPeakRssMb: mb(Math.max(...bullmq.map((r) => r.peak))),
      graphileWorkerDeliveriesPerSecLast80: g.rateLast80,
      graphileWorkerDeliveriesPerSec: g.rate,
      graphileWorkerCpuUsPerDeliveryLast80: cpuUs(g.cpuMsLast80, steadyCount),
      graphileWorkerCpuUsPerDelivery: cpuUs(g.cpuMs, g.delivered),
      graphileWorkerServerCpuUsPerDeliveryLast80: cpuUs(g.serverCpuMsLast80, steadyCount),
      graphileWorkerTotalCpuUsPerDeliveryLast80: cpuUs(totalMs.graphile, steadyCount),
      ...graphileRows,
      graphileWorkerStartupMs: g.startupMs,
      graphileWorkerPeakRssMb: mb(Math.max(...graphile.map((r) => r.peak))),
      rawUndiciDeliveriesPerSec: raw,
      peersDelivered: Math.min(b.delivered, g.delivered),
    },
    ratios,
    peakRssMb: mb(peak),
    targets: [
      target(
        'PostgreSQL total CPU per delivery (1 worker + server, last 80%) vs graphile-worker',
        '<= 1.0x',
        ratios.pg1TotalCpuVsGraphileWorker,
        ratios.pg1TotalCpuVsGraphileWorker <= 1,
      ),
      target(
        'SQLite total CPU per delivery (every thread, last 80%) vs graphile-worker',
        '<= 1.0x',
        ratios.sqliteTotalCpuVsGraphileWorker,
        ratios.sqliteTotalCpuVsGraphileWorker <= 1,
      ),
      target(
        'PostgreSQL delivery (1 worker) vs graphile-worker',
        '>= 1.0x',
        ratios.pg1WorkerVsGraphileWorker,
        ratios.pg1WorkerVsGraphileWorker >= 1,
      ),
      target(
        'SQLite delivery vs the faster of graphile-worker and BullMQ',
        '>= 1.0x',
        ratios.sqliteVsFasterPeer,
        ratios.sqliteVsFasterPeer >= 1,
      ),
      target(
        'PostgreSQL rows written per delivery (1 worker)',
        '<= 2.0',
        pg1Rows.pg1RowsWrittenPerDelivery!,
        pg1Rows.pg1RowsWrittenPerDelivery! <= 2,
      ),
      target(
        'PostgreSQL non-HOT updates per delivery (1 worker)',
        '<= 1.0',
        pg1Rows.pg1NonHotUpdatesPerDelivery!,
        pg1Rows.pg1NonHotUpdatesPerDelivery! <= 1,
      ),
      target(
        'SQLite delivery vs raw undici (peers run)',
        '>= 0.50x',
        ratios.sqliteVsRawUndici,
        ratios.sqliteVsRawUndici >= 0.5,
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
      `${count} deliveries to one endpoint from a backlog, ${ENDPOINT_CONCURRENCY} in flight per worker process (Herald: HERALD_ENDPOINT_CONCURRENCY; BullMQ: concurrency; graphile-worker: concurrency), undici with ${ENDPOINT_CONCURRENCY} connections`,
      'rates: *Last80 over the last 80% of arrivals (from the arrival that ends the first fifth to the last), which leaves out a fresh worker climbing to its steady rate; the others from the first arrival to the last; targets are judged on the former',
      "CPU per delivery: user + system time of the worker processes only, every thread (Herald: every worker process, summed; peers: their one process), read from /proc; *Last80 over the same window as the rates, the others from the worker's start to the last arrival; *ServerCpu*: every postgres process on the machine (Herald on PostgreSQL, graphile-worker) or redis-server (BullMQ) over the same window, which the worker's figure leaves out; *TotalCpu*: worker + server (on SQLite the worker's figure: its queue thread runs the store)",
      "rows per delivery (PostgreSQL: Herald with 1 worker, graphile-worker; the whole drain): pg_stat_user_tables' n_tup_ins, n_tup_upd (of which n_tup_hot_upd are HOT) and n_tup_del summed over the contender's own database's tables (Herald's workers heartbeat left out), read before the worker starts (the backlog written, the counters settled: read until two readings 1.1 s apart agree) and once the worker has stopped after the last arrival (a backend reports its last counters as it exits, where an idle one may hold them 10 s), settled the same way, over the deliveries; rows written = inserted + updated + deleted, non-HOT = updated - HOT; Herald's update that makes the backlog due is read in its own transaction and left out, and its deliveries vacuumed after it (as the store-work guard test does, in both PostgreSQL drains); the worker's start-up and shutdown and the outcomes written after the last arrival are in the window; Herald keeps its delivery log (an attempt row per delivery), graphile-worker deletes each job's row",
      `the better of ${rounds} turns each by the steady rate: Herald SQLite ${runs(sqlite)}, PostgreSQL 1 worker ${runs(pg1)}, 2 workers ${runs(pg2)}; BullMQ ${runs(bullmq)}; graphile-worker ${runs(graphile)} deliveries/s over the last 80%; raw undici ${raws.join(' / ')}`,
      `BullMQ 6: one Worker, concurrency ${ENDPOINT_CONCURRENCY}, removeOnComplete {count: 0}, removeOnFail {count: 5000}; graphile-worker 0.17: concurrency ${ENDPOINT_CONCURRENCY}, maxPoolSize ${ENDPOINT_CONCURRENCY + 1}, localQueue 500, completeJobBatchDelay 0, failJobBatchDelay 0, NO_LOG_SUCCESS`,
    ],
    seconds: 0,
  };
}
