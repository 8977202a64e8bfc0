import { createHmac } from 'node:crypto';
import { Pool } from 'undici';
import { emitBody, partitionDatabase, setupOrg, type Herald } from '../lib/herald.js';
import { tempDir } from '../lib/procs.js';
import { createDatabase } from '../lib/pg.js';
import { commandCpuMs, processCpuMs } from '../lib/cpu.js';
import { drainFigures, LEFT_OUT } from '../lib/drain.js';
import { setBacklogRunAt } from '../lib/backlog.js';
import {
  makeDue,
  perDelivery,
  settledTableWork,
  type TableWork,
  type TableWorkPerDelivery,
  vacuumDeliveries,
} from '../lib/table-work.js';
import { nowMs, round } from '../lib/stats.js';
import { mb, target, type Context, type ScenarioResult } from '../lib/context.js';
import {
  benchTransformation,
  closeTargets,
  emitCount,
  emitTargets,
  fastest,
  heraldOptions,
  startHerald,
  stopAll,
} from './common.js';

export const ENDPOINT_CONCURRENCY = 16; // Herald's default HERALD_ENDPOINT_CONCURRENCY, set explicitly below

export interface DeliveryRun {
  /** Deliveries per second from the first arrival to the last. */
  rate: number;
  /** Deliveries per second over the last 80% of arrivals (drainFigures). */
  rateLast80: number;
  /** Deliveries per second from the worker's spawn to the last arrival (start-up included). */
  rateFromSpawn: number;
  startupMs: number;
  peak: number;
  /** Deliveries that arrived before the time limit (all of them unless the drain timed out). */
  delivered: number;
  /** CPU time each worker process used from the end of its start-up to the last arrival, ms. */
  workerCpuMs: number[];
  /** The same over the last 80% of arrivals: from the arrival that ends the first fifth to the last. */
  workerCpuMsLast80: number[];
  /** CPU time of every PostgreSQL server process over the last 80% of arrivals, ms (0 on SQLite). */
  serverCpuMsLast80: number;
  /** PostgreSQL's rows written per delivery over the whole drain, when asked for (lib/table-work.ts). */
  tableWork?: TableWorkPerDelivery;
}

export const DRAIN_LIMIT_MS = 120_000;

/**
 * Emits `count` messages with the worker off, then starts `workers` worker processes and times the drain.
 * With `tables` (PostgreSQL), also reads the database's table counters, settled, before the workers start
 * and once they have stopped after the last arrival, leaving out the update that makes the backlog due
 * (which is then vacuumed).
 */
export async function drain(
  ctx: Context,
  label: string,
  count: number,
  workers: number,
  databaseUrl?: string,
  tables = false,
  /** More fields of the endpoint (a transformation, say). */
  endpointFields: Record<string, unknown> = {},
): Promise<DeliveryRun> {
  const dataDir = tempDir('herald-bench-delivery-');
  const env = { HERALD_ENDPOINT_CONCURRENCY: String(ENDPOINT_CONCURRENCY) };
  const api = await startHerald(
    heraldOptions(ctx, { name: `${label}-api`, role: 'api', dataDir, env, ...(databaseUrl ? { databaseUrl } : {}) }),
  );
  const setup = await setupOrg(
    api.url!,
    1,
    1,
    () => `${ctx.receiver.url}/delivery/0`,
    () => endpointFields,
  );
  // BENCH_PARTITIONED=1: the PostgreSQL drains run on partitioned history tables (`herald partition`).
  if (databaseUrl && process.env.BENCH_PARTITIONED === '1') partitionDatabase(databaseUrl);
  const targets = emitTargets([api.url!], setup.key, 32);
  ctx.log(`  emitting ${count} with the worker off`);
  await emitCount(targets, count, 32, (n) => emitBody(setup.appIds[0]!, n));
  await closeTargets(targets);
  let peak = await stopAll(api);
  // The backlog waits an hour ahead while the workers start, and is due once they all run.
  await setBacklogRunAt(Date.now() + 3_600_000, dataDir, databaseUrl);
  const measured = tables && databaseUrl ? databaseUrl : null;
  const before = measured ? await settledTableWork(measured) : null;

  await ctx.receiver.reset();
  const spawnedAt = nowMs();
  const started: Herald[] = [];
  const cpuAtStart: number[] = [];
  try {
    for (let i = 0; i < workers; i++) {
      const worker = await startHerald(
        heraldOptions(ctx, {
          name: `${label}-worker${workers > 1 ? `-${i}` : ''}`,
          role: 'worker',
          dataDir,
          env,
          ...(databaseUrl ? { databaseUrl } : {}),
        }),
      );
      started.push(worker);
    }
    for (const worker of started) cpuAtStart.push(processCpuMs(worker.child.pid));
    let due: TableWork | null = null;
    let vacuumed: Promise<void> | null = null;
    if (measured) {
      due = await makeDue(measured, Date.now());
      // Beside the drain's first claims, as in the store-work guard test; awaited before the last reading.
      vacuumed = vacuumDeliveries(measured).catch((error) => ctx.log(`  vacuum failed: ${(error as Error).message}`));
    } else await setBacklogRunAt(Date.now(), dataDir, databaseUrl);
    await ctx.receiver.waitFor(Math.floor(count * LEFT_OUT) + 1, DRAIN_LIMIT_MS).catch(() => null);
    const cpuAtFifth = started.map((worker) => processCpuMs(worker.child.pid));
    const serverAtFifth = databaseUrl ? commandCpuMs('postgres') : 0;
    const last = await ctx.receiver.waitFor(count, DRAIN_LIMIT_MS).catch(() => null);
    const cpuAtLast = started.map((worker) => processCpuMs(worker.child.pid));
    const serverCpuMsLast80 = databaseUrl ? commandCpuMs('postgres') - serverAtFifth : 0;
    const workerCpuMs = cpuAtLast.map((cpu, i) => cpu - cpuAtStart[i]!);
    const workerCpuMsLast80 = cpuAtLast.map((cpu, i) => cpu - cpuAtFifth[i]!);
    const figures = await drainFigures(ctx, count, spawnedAt, last, DRAIN_LIMIT_MS);
    peak = Math.max(peak, await stopAll(...started));
    // Read once the workers have stopped: their backends report their last counters as they exit.
    await vacuumed;
    const tableWork =
      measured && before && due
        ? perDelivery(before, await settledTableWork(measured), figures.delivered, due)
        : undefined;
    return {
      rate: figures.rate,
      rateLast80: figures.rateLast80,
      rateFromSpawn: figures.rateFromStart,
      startupMs: figures.startupMs,
      peak,
      delivered: figures.delivered,
      workerCpuMs,
      workerCpuMsLast80,
      serverCpuMsLast80,
      ...(tableWork ? { tableWork } : {}),
    };
  } finally {
    await stopAll(...started);
  }
}

/** Runs send(0 … count - 1) in `lanes` concurrent lanes, each taking the next number when its last is done. */
export async function inLanes(count: number, lanes: number, send: (n: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < count) await send(next++);
    }),
  );
}

/** The payload of emit number n, as JSON (the `data` of its delivered body). */
export function benchPayload(n: number): string {
  return JSON.stringify((JSON.parse(emitBody('app', n)) as { payload: unknown }).payload);
}

/** The same number of signed POSTs of the same bodies to the same receiver, with undici, at the same concurrency. */
export async function rawUndici(ctx: Context, count: number): Promise<number> {
  await ctx.receiver.reset();
  const secret = Buffer.from('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'base64');
  const pool = new Pool(ctx.receiver.url, { connections: ENDPOINT_CONCURRENCY, keepAliveTimeout: 4_000 });
  const createdAt = new Date().toISOString();
  const started = nowMs();
  try {
    await inLanes(count, ENDPOINT_CONCURRENCY, async (n) => {
      const body = `{"type":"invoice.paid","timestamp":${JSON.stringify(createdAt)},"data":${benchPayload(n)}}`;
      const id = `evt_baseline${String(n).padStart(14, '0')}`;
      const timestamp = Math.floor(Date.now() / 1000);
      const signature = createHmac('sha256', secret).update(`${id}.${timestamp}.${body}`).digest('base64');
      const response = await pool.request({
        method: 'POST',
        path: '/delivery/0',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'bench',
          'webhook-id': id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': `v1,${signature}`,
        },
        body,
      });
      await response.body.text();
      if (response.statusCode !== 200) throw new Error(`receiver answered ${response.statusCode}`);
    });
    const last = await ctx.receiver.waitFor(count, 60_000);
    return round((count / (Math.max(last, nowMs()) - started)) * 1000, 0);
  } finally {
    await pool.close();
  }
}

/**
 * Herald's drain and the raw baseline take turns, twice in a full run, and the better run of each counts:
 * a single pair moved between 0.23x and 0.5x on a shared machine, as either run met a busy moment.
 */
export async function delivery(ctx: Context): Promise<ScenarioResult> {
  const count = ctx.sizes.deliveries;
  const rounds = ctx.quick ? 1 : 2;
  const runs: DeliveryRun[] = [];
  const transformedRuns: DeliveryRun[] = [];
  const raws: number[] = [];
  for (let round = 0; round < rounds; round++) {
    runs.push(await drain(ctx, 'delivery', count, 1));
    ctx.log('  the same with a transformation on the endpoint');
    transformedRuns.push(
      await drain(ctx, 'delivery-transformed', count, 1, undefined, false, {
        transformation: { code: benchTransformation(0) },
      }),
    );
    ctx.log('  baseline: raw undici');
    raws.push(await rawUndici(ctx, count));
  }
  const run = fastest(runs);
  const transformed = fastest(transformedRuns);
  const raw = Math.max(...raws);
  const peak = Math.max(...[...runs, ...transformedRuns].map((r) => r.peak));
  const ratio = round(run.rate / raw);
  const transformedRatio = round(transformed.rate / run.rate);
  return {
    name: 'delivery',
    title: 'Delivery from a backlog (SQLite, worker role)',
    store: 'sqlite',
    figures: {
      deliveries: count,
      delivered: run.delivered,
      deliveriesPerSec: run.rate,
      deliveriesPerSecFromSpawn: run.rateFromSpawn,
      workerStartupMs: run.startupMs,
      transformedDeliveriesPerSec: transformed.rate,
    },
    baseline: { deliveriesPerSec: raw },
    ratios: { deliveryVsRawUndici: ratio, transformedVsPlain: transformedRatio },
    peakRssMb: mb(peak),
    targets: [
      target('delivery vs raw undici', '>= 0.50x', ratio, ratio >= 0.5),
      target(
        'delivery with a transformation on the endpoint vs without',
        '>= 0.80x',
        transformedRatio,
        transformedRatio >= 0.8,
      ),
      target('delivery peak RSS', '< 300 MB', mb(peak), mb(peak) < 300),
    ],
    notes: [
      `one endpoint, HERALD_ENDPOINT_CONCURRENCY=${ENDPOINT_CONCURRENCY}; rate measured from the first arrival to the last (start-up reported apart)`,
      `the better of ${rounds} alternating runs each: Herald ${runs.map((r) => r.rate).join(' / ')}, with a transformation ${transformedRuns.map((r) => r.rate).join(' / ')}, raw undici ${raws.join(' / ')} deliveries/s`,
      'transformedVsPlain: the drain with a small transformation on the endpoint (bench/scenarios/common.ts) over the plain drain',
    ],
    seconds: 0,
  };
}

export async function pgDelivery(ctx: Context): Promise<ScenarioResult> {
  const count = ctx.sizes.pgDeliveries;
  const oneDb = await createDatabase('dlv1');
  const one = await drain(ctx, 'pg-delivery', count, 1, oneDb.url);
  await oneDb.drop();
  const twoDb = await createDatabase('dlv2');
  const two = await drain(ctx, 'pg-delivery2', count, 2, twoDb.url);
  await twoDb.drop();
  ctx.log('  baseline: raw undici');
  const raw = await rawUndici(ctx, count);
  const ratio = round(one.rate / raw);
  return {
    name: 'pg-delivery',
    title: 'Delivery from a backlog (PostgreSQL, 1 and 2 workers)',
    store: 'postgres',
    figures: {
      deliveries: count,
      delivered1Worker: one.delivered,
      deliveriesPerSec1Worker: one.rate,
      delivered2Workers: two.delivered,
      deliveriesPerSec2Workers: two.rate,
      workerStartupMs: one.startupMs,
    },
    baseline: { deliveriesPerSec: raw },
    ratios: { delivery1WorkerVsRawUndici: ratio, delivery2WorkersVsRawUndici: round(two.rate / raw) },
    peakRssMb: mb(Math.max(one.peak, two.peak)),
    targets: [target('PostgreSQL delivery (1 worker) vs raw undici', '>= 0.50x', ratio, ratio >= 0.5)],
    notes: [
      `${count} deliveries to one endpoint, HERALD_ENDPOINT_CONCURRENCY=${ENDPOINT_CONCURRENCY} per worker process; the raw baseline uses ${ENDPOINT_CONCURRENCY} connections`,
      `each drain is cut at ${DRAIN_LIMIT_MS / 1000}s; the rate is then what arrived over the time taken`,
    ],
    seconds: 0,
  };
}
