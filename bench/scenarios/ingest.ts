import { join } from 'node:path';
import { setupOrg } from '../lib/herald.js';
import { tempDir } from '../lib/procs.js';
import { createDatabase } from '../lib/pg.js';
import { round } from '../lib/stats.js';
import { mb, target, type Context, type ScenarioResult } from '../lib/context.js';
import { heraldOptions, measureClosed, measureOpen, startBaseline, startHerald, stopAll } from './common.js';

const APPS = 10;
const baselineApps = Array.from({ length: APPS }, (_, i) => `app_${i}`);

/**
 * Ingest: closed-loop emits at fixed concurrency against Herald (API role, worker off, one subscribed
 * endpoint per application), then half that rate open-loop; and the bare fastify baseline.
 */
export async function ingest(ctx: Context): Promise<ScenarioResult> {
  const dataDir = tempDir('herald-bench-ingest-');
  const herald = await startHerald(heraldOptions(ctx, { name: 'ingest-herald', role: 'api', dataDir }));
  let peak = 0;
  const setup = await setupOrg(herald.url!, APPS, 1, (a) => `${ctx.receiver.url}/ingest/${a}`);
  ctx.log(`  herald closed loop, concurrency ${ctx.sizes.ingestConcurrency}`);
  const closed = await measureClosed(ctx, [herald.url!], setup.key, setup.appIds);
  ctx.log(`  herald open loop at ${Math.round(closed.rate / 2)}/s`);
  const open = await measureOpen([herald.url!], setup.key, setup.appIds, closed.rate / 2, ctx.sizes.ingestSeconds);
  peak = await stopAll(herald);

  const baseDir = tempDir('herald-bench-baseline-');
  const baseline = await startBaseline(ctx, 'ingest-baseline', 'sqlite', join(baseDir, 'baseline.db'), APPS);
  ctx.log('  baseline closed loop');
  const base = await measureClosed(ctx, [baseline.url], 'none', baselineApps);
  const baselineRss = await stopAll(baseline);

  const ratio = round(closed.rate / base.rate);
  return {
    name: 'ingest',
    title: 'Ingest (SQLite, API role)',
    store: 'sqlite',
    figures: {
      emitsPerSec: closed.rate,
      p50Ms: closed.p50,
      p99Ms: closed.p99,
      errors: closed.errors,
      openLoopOffered: open.offered,
      openLoopAchieved: open.achieved,
      openLoopP50Ms: open.p50,
      openLoopP99Ms: open.p99,
      openLoopMaxMs: open.max,
      openLoopErrors: open.errors,
    },
    baseline: { emitsPerSec: base.rate, p50Ms: base.p50, p99Ms: base.p99, errors: base.errors, peakRssMb: mb(baselineRss) },
    ratios: { emitsVsBaseline: ratio },
    peakRssMb: mb(peak),
    targets: [
      target('ingest vs per-request-transaction baseline', '>= 1.0x', ratio, ratio >= 1.0),
      target('ingest emits/s', '>= 8000/s', closed.rate, closed.rate >= 8000),
      target('open loop at half rate, p99', '< 10 ms', open.p99, open.p99 < 10 && open.errors === 0),
      target('ingest peak RSS', '< 300 MB', mb(peak), mb(peak) < 300),
    ],
    notes: [
      `concurrency ${ctx.sizes.ingestConcurrency}, ${ctx.sizes.ingestSeconds}s after ${ctx.sizes.warmupSeconds}s warm-up; ${APPS} applications with one endpoint each; Herald logs at its default level (info) to a file`,
      `open loop largest send lag ${open.maxSendLagMs} ms`,
    ],
    seconds: 0,
  };
}

/** Ingest on PostgreSQL: the baseline, one API process, and two API processes sharing the load. */
export async function pgIngest(ctx: Context): Promise<ScenarioResult> {
  const baseDb = await createDatabase('base');
  const baseline = await startBaseline(ctx, 'pg-ingest-baseline', 'postgres', baseDb.url, APPS);
  ctx.log('  baseline closed loop');
  const base = await measureClosed(ctx, [baseline.url], 'none', baselineApps);
  await stopAll(baseline);
  await baseDb.drop();

  const single = await createDatabase('one');
  const one = await startHerald(heraldOptions(ctx, { name: 'pg-ingest-herald', role: 'api', dataDir: tempDir('herald-bench-pg-'), databaseUrl: single.url }));
  const setupOne = await setupOrg(one.url!, APPS, 1, (a) => `${ctx.receiver.url}/ingest/${a}`);
  ctx.log('  herald (1 API process) closed loop');
  const closedOne = await measureClosed(ctx, [one.url!], setupOne.key, setupOne.appIds);
  const peakOne = await stopAll(one);
  await single.drop();

  const multi = await createDatabase('two');
  const dataDir = tempDir('herald-bench-pg-');
  const a = await startHerald(heraldOptions(ctx, { name: 'pg-ingest-herald-a', role: 'api', dataDir, databaseUrl: multi.url }));
  const b = await startHerald(heraldOptions(ctx, { name: 'pg-ingest-herald-b', role: 'api', dataDir, databaseUrl: multi.url }));
  const setupTwo = await setupOrg(a.url!, APPS, 1, (i) => `${ctx.receiver.url}/ingest/${i}`);
  ctx.log('  herald (2 API processes) closed loop');
  const closedTwo = await measureClosed(ctx, [a.url!, b.url!], setupTwo.key, setupTwo.appIds);
  const peakTwo = await stopAll(a, b);
  await multi.drop();

  const ratioOne = round(closedOne.rate / base.rate);
  const ratioTwo = round(closedTwo.rate / base.rate);
  const peak = Math.max(peakOne, peakTwo);
  return {
    name: 'pg-ingest',
    title: 'Ingest (PostgreSQL)',
    store: 'postgres',
    figures: {
      emitsPerSec1Api: closedOne.rate,
      p50Ms1Api: closedOne.p50,
      p99Ms1Api: closedOne.p99,
      emitsPerSec2Api: closedTwo.rate,
      p50Ms2Api: closedTwo.p50,
      p99Ms2Api: closedTwo.p99,
      errors: closedOne.errors + closedTwo.errors,
    },
    baseline: { emitsPerSec: base.rate, p50Ms: base.p50, p99Ms: base.p99, errors: base.errors },
    ratios: { emits1ApiVsBaseline: ratioOne, emits2ApiVsBaseline: ratioTwo },
    peakRssMb: mb(peak),
    targets: [target('PostgreSQL ingest (1 API process) vs baseline', '>= 1.0x', ratioOne, ratioOne >= 1.0)],
    notes: [`concurrency ${ctx.sizes.ingestConcurrency}; baseline: bare fastify, pg pool of 10, BEGIN/COMMIT per request`],
    seconds: 0,
  };
}
