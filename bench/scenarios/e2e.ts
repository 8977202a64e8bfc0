import { Api, emitBody, setupOrg, type Herald, type Setup } from '../lib/herald.js';
import { insertBacklog } from '../lib/backlog.js';
import { tempDir } from '../lib/procs.js';
import { createDatabase } from '../lib/pg.js';
import { nowMs, round, summarize } from '../lib/stats.js';
import { mb, target, type Context, type ScenarioResult } from '../lib/context.js';
import {
  benchTransformation,
  heraldOptions,
  measureEndToEnd,
  startHerald,
  stopAll,
  type E2eFigures,
} from './common.js';

const APPS = 10;

async function e2eRun(
  ctx: Context,
  name: string,
  databaseUrl?: string,
  split = false,
  slow = false,
): Promise<{ e2e: E2eFigures; peak: number }> {
  const dataDir = tempDir('herald-bench-e2e-');
  const db = databaseUrl ? { databaseUrl } : {};
  const services: Herald[] = [];
  try {
    if (split) {
      for (const role of ['api', 'api', 'worker', 'worker'] as const) {
        services.push(
          await startHerald(heraldOptions(ctx, { name: `${name}-${role}-${services.length}`, role, dataDir, ...db })),
        );
      }
    } else {
      services.push(await startHerald(heraldOptions(ctx, { name, role: 'all', dataDir, ...db })));
    }
    const urls = services.filter((s) => s.url).map((s) => s.url!);
    // Slow-endpoint run: 5 applications, the first one's endpoint answers after 5 s (20% of the traffic).
    const apps = slow ? 5 : APPS;
    const setup = await setupOrg(urls[0]!, apps, 1, slow ? slowFirst(ctx) : (a) => `${ctx.receiver.url}/e2e/${a}`);
    const seconds = slow ? ctx.sizes.slowSeconds : ctx.sizes.e2eSeconds;
    const e2e = await measureEndToEnd(
      ctx,
      urls,
      setup.key,
      setup.appIds,
      ctx.sizes.e2eRate,
      seconds,
      slow ? (a) => a !== 0 : undefined,
    );
    return { e2e, peak: Math.max(...services.map((s) => s.child.peakRss())) };
  } finally {
    await stopAll(...services);
  }
}

function e2eFigures(e2e: E2eFigures): Record<string, number> {
  return {
    offeredPerSec: e2e.offered,
    achievedPerSec: e2e.achieved,
    sent: e2e.sent,
    delivered: e2e.delivered,
    sustained: e2e.sustained,
    p50Ms: e2e.p50,
    p99Ms: e2e.p99,
    maxMs: e2e.max,
    emitP99Ms: e2e.emitP99,
    errors: e2e.errors,
    drainMs: e2e.drainMs,
  };
}

export async function endToEnd(ctx: Context): Promise<ScenarioResult> {
  const { e2e, peak } = await e2eRun(ctx, 'e2e-herald');
  return {
    name: 'e2e',
    title: `End to end at ${ctx.sizes.e2eRate}/s (SQLite, role all)`,
    store: 'sqlite',
    figures: e2eFigures(e2e),
    baseline: {},
    ratios: {},
    peakRssMb: mb(peak),
    targets: [
      target(`end to end ${ctx.sizes.e2eRate}/s sustained`, 'yes', e2e.sustained, e2e.sustained === 1),
      target('end to end p99', '< 20 ms', e2e.p99, e2e.p99 < 20),
      target('end-to-end peak RSS', '< 300 MB', mb(peak), mb(peak) < 300),
    ],
    notes: [
      `open loop, ${ctx.sizes.e2eSeconds}s after ${ctx.sizes.warmupSeconds}s warm-up, ${APPS} applications with one endpoint each; latency = receiver arrival - emit send time`,
    ],
    seconds: 0,
  };
}

/** Scenario 3's result, the reference of the scenarios that measure the other endpoints beside a slow one. */
async function endToEndReference(ctx: Context): Promise<ScenarioResult> {
  let reference = ctx.results.get('e2e');
  if (!reference) {
    ctx.log('  measuring the end-to-end reference first');
    reference = await endToEnd(ctx);
    ctx.results.set('e2e', reference);
  }
  return reference;
}

/** Five applications; the first one's endpoint answers after 5 s (20% of the traffic). */
const slowFirst = (ctx: Context) => (app: number) => `${ctx.receiver.url}/${app === 0 ? 'slow' : 'e2e'}/${app}`;

export async function slowEndpoint(ctx: Context): Promise<ScenarioResult> {
  const reference = await endToEndReference(ctx);
  const { e2e, peak } = await e2eRun(ctx, 'slow-herald', undefined, false, true);
  return othersBesideSlow(reference, e2e, peak, {
    name: 'slow',
    title: 'One endpoint answers in 5 s, 20% of the traffic (SQLite, role all)',
    ratioTarget: "others' p99 vs scenario 3 (end to end)",
    rssTarget: 'slow-endpoint peak RSS',
    note: `${ctx.sizes.e2eRate}/s open loop for ${ctx.sizes.slowSeconds}s over 5 applications; figures are for the 4 fast endpoints only`,
  });
}

/** A scenario's result for the 4 fast endpoints beside the slow one: their p99 against scenario 3's. */
function othersBesideSlow(
  reference: ScenarioResult,
  e2e: E2eFigures,
  peak: number,
  {
    name,
    title,
    ratioTarget,
    rssTarget,
    note,
    figures = {},
  }: {
    name: string;
    title: string;
    ratioTarget: string;
    rssTarget: string;
    note: string;
    figures?: Record<string, number>;
  },
): ScenarioResult {
  const ratio = round(e2e.p99 / reference.figures.p99Ms!);
  return {
    name,
    title,
    store: 'sqlite',
    figures: { ...e2eFigures(e2e), ...figures, othersP50Ms: e2e.p50, othersP99Ms: e2e.p99 },
    baseline: { e2eP99Ms: reference.figures.p99Ms! },
    ratios: { othersP99VsEndToEnd: ratio },
    peakRssMb: mb(peak),
    targets: [
      target(ratioTarget, '<= 2.0x', ratio, ratio <= 2),
      target(rssTarget, '< 300 MB', mb(peak), mb(peak) < 300),
    ],
    notes: [note],
    seconds: 0,
  };
}

/**
 * The slow scenario with the slow endpoint's backlog due at the start (a receiver back from an outage):
 * every claim for the other endpoints leaves out a queue of due attempts ahead of theirs.
 */
export async function neighbourBacklog(ctx: Context): Promise<ScenarioResult> {
  const reference = await endToEndReference(ctx);
  const rows = ctx.sizes.neighbourBacklog;
  const dataDir = tempDir('herald-bench-neighbour-');
  // The organization on an empty store, then (service stopped) the backlog written straight to it.
  const first = await startHerald(heraldOptions(ctx, { name: 'neighbour-setup', role: 'all', dataDir }));
  let setup: Setup;
  try {
    setup = await setupOrg(first.url!, 5, 1, slowFirst(ctx));
  } finally {
    await stopAll(first);
  }
  ctx.log(`  queueing ${rows.toLocaleString('en')} due deliveries for the slow endpoint`);
  insertBacklog(
    dataDir,
    rows,
    { orgId: setup.orgId, appId: setup.appIds[0]!, endpointId: setup.endpointIds[0]! },
    'due',
  );
  const herald = await startHerald(heraldOptions(ctx, { name: 'neighbour-herald', role: 'all', dataDir }));
  let e2e: E2eFigures;
  let peak = 0;
  try {
    e2e = await measureEndToEnd(
      ctx,
      [herald.url!],
      setup.key,
      setup.appIds,
      ctx.sizes.e2eRate,
      ctx.sizes.slowSeconds,
      (app) => app !== 0,
    );
  } finally {
    peak = await stopAll(herald);
  }
  return othersBesideSlow(reference, e2e, peak, {
    name: 'neighbour',
    title: `One endpoint answers in 5 s with ${rows.toLocaleString('en')} attempts due (SQLite, role all)`,
    ratioTarget: "others' p99 beside a due backlog vs scenario 3",
    rssTarget: 'neighbour-backlog peak RSS',
    note: `as scenario "slow", with the slow endpoint's ${rows.toLocaleString('en')} attempts due at the start; figures are for the 4 fast endpoints only`,
    figures: { backlogRows: rows },
  });
}

export async function pgEndToEnd(ctx: Context): Promise<ScenarioResult> {
  const oneDb = await createDatabase('e2e1');
  const one = await e2eRun(ctx, 'pg-e2e', oneDb.url);
  await oneDb.drop();
  const splitDb = await createDatabase('e2e4');
  const split = await e2eRun(ctx, 'pg-e2e-split', splitDb.url, true);
  await splitDb.drop();
  const figures: Record<string, number> = {};
  for (const [suffix, run] of [
    ['1Proc', one.e2e],
    ['2Api2Worker', split.e2e],
  ] as const) {
    figures[`achievedPerSec${suffix}`] = run.achieved;
    figures[`sustained${suffix}`] = run.sustained;
    figures[`p50Ms${suffix}`] = run.p50;
    figures[`p99Ms${suffix}`] = run.p99;
    figures[`maxMs${suffix}`] = run.max;
    figures[`emitP99Ms${suffix}`] = run.emitP99;
  }
  return {
    name: 'pg-e2e',
    title: `End to end at ${ctx.sizes.e2eRate}/s (PostgreSQL, 1 process and 2 API + 2 workers)`,
    store: 'postgres',
    figures,
    baseline: {},
    ratios: {},
    peakRssMb: mb(Math.max(one.peak, split.peak)),
    targets: [
      target('PostgreSQL end to end sustained (1 process)', 'yes', one.e2e.sustained, one.e2e.sustained === 1),
      target('PostgreSQL end to end p99 (1 process)', '< 50 ms', one.e2e.p99, one.e2e.p99 < 50),
      target('PostgreSQL end to end p99 (2 API + 2 workers)', '< 50 ms', split.e2e.p99, split.e2e.p99 < 50),
    ],
    notes: ['targets for PostgreSQL are the embedded ones, applied for comparison'],
    seconds: 0,
  };
}

/** Fan-out: one message to an application with N endpoints (same receiver, different paths). */
export async function fanout(ctx: Context): Promise<ScenarioResult> {
  const n = ctx.sizes.fanoutEndpoints;
  const dataDir = tempDir('herald-bench-fanout-');
  const herald = await startHerald(heraldOptions(ctx, { name: 'fanout-herald', role: 'all', dataDir }));
  try {
    // Three applications of n endpoints each: the first's plain (the baseline), the second's each with a
    // content filter of its own that the message passes, the third's each with a small transformation of
    // its own, so all three fan out to every endpoint.
    ctx.log(`  creating ${3 * n} endpoints`);
    const setup = await setupOrg(
      herald.url!,
      3,
      n,
      (a, e) => `${ctx.receiver.url}/fan/${a}/${e}`,
      (a, e) =>
        a === 0
          ? {}
          : a === 1
            ? { filter: { type: 'invoice.paid', 'data.amount': { $gte: e }, 'data.currency': { $in: ['usd', 'eur'] } } }
            : { transformation: { code: benchTransformation(e) } },
    );
    const api = new Api(herald.url!, setup.key);
    const kinds = ['plain', 'filtered', 'transformed'] as const;
    const rounds = { plain: [] as number[], filtered: [] as number[], transformed: [] as number[] };
    const emits = { plain: [] as number[], filtered: [] as number[], transformed: [] as number[] };
    // Rounds alternate, so a drift of the machine falls on each.
    for (let r = 0; r < ctx.sizes.fanoutRounds; r++) {
      for (const kind of kinds) {
        await ctx.receiver.reset();
        const sent = nowMs();
        const appId = setup.appIds[kinds.indexOf(kind)]!;
        const reply = await api.post('/api/v1/messages', JSON.parse(emitBody(appId, r)));
        emits[kind].push(nowMs() - sent);
        if (reply.delivery_ids.length !== n)
          throw new Error(`${kind} fan-out emit made ${reply.delivery_ids.length} deliveries, expected ${n}`);
        const last = await ctx.receiver.waitFor(n, 60_000);
        rounds[kind].push(last - sent);
      }
    }
    const plain = summarize(rounds.plain);
    const filtered = summarize(rounds.filtered);
    const transformed = summarize(rounds.transformed);
    // Speed ratios: above 1, the filtered (transformed) fan-out is the faster.
    const ratio = round(plain.p50 / filtered.p50);
    const transformedRatio = round(plain.p50 / transformed.p50);
    const emitRatio = round(summarize(emits.plain).p50 / summarize(emits.filtered).p50);
    const peak = await stopAll(herald);
    return {
      name: 'fanout',
      title: `Fan-out: one message to ${n} endpoints, plain, with a content filter on each, with a transformation on each (SQLite, role all)`,
      store: 'sqlite',
      figures: {
        endpoints: n,
        rounds: rounds.plain.length,
        lastArrivalMedianMs: plain.p50,
        lastArrivalMaxMs: plain.max,
        emitMaxMs: round(Math.max(...emits.plain)),
        filteredLastArrivalMedianMs: filtered.p50,
        filteredEmitMedianMs: summarize(emits.filtered).p50,
        transformedLastArrivalMedianMs: transformed.p50,
      },
      baseline: {},
      ratios: { filteredVsPlain: ratio, filteredEmitVsPlain: emitRatio, transformedVsPlain: transformedRatio },
      peakRssMb: mb(peak),
      targets: [
        target(`fan-out to ${n} endpoints, last arrival (worst round)`, '< 1000 ms', plain.max, plain.max < 1000),
        target('fan-out with a filter on each endpoint vs without', '>= 0.8x', ratio, ratio >= 0.8),
        target(
          'fan-out with a transformation on each endpoint vs without',
          '>= 0.8x',
          transformedRatio,
          transformedRatio >= 0.8,
        ),
        target('fan-out peak RSS', '< 300 MB', mb(peak), mb(peak) < 300),
      ],
      notes: [
        `${rounds.plain.length} round(s) of each, alternating; time from the emit's send to the last arrival`,
        'filteredVsPlain: median last arrival without filters / with one on each endpoint (1 = no cost)',
        "filteredEmitVsPlain: the same for the emit's answer alone, where filters are evaluated",
        'transformedVsPlain: median last arrival without transformations / with one on each endpoint (its own code: one sandbox runtime each)',
      ],
      seconds: 0,
    };
  } finally {
    await stopAll(herald);
  }
}
