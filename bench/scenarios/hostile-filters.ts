import { request } from 'undici';
import { tempDir } from '../lib/procs.js';
import { nowMs, round, sleep, summarize } from '../lib/stats.js';
import { mb, target, type Context, type ScenarioResult } from '../lib/context.js';
import { Api, setupOrg } from '../lib/herald.js';
import { heraldOptions, startHerald, stopAll } from './common.js';

// One tenant's content filters against the event loop every tenant shares (issue 42's three inputs): ten
// costly patterns over a 400,000-character string, `$all` of 256 values over a 60,000-element array, and a
// thousand ordinary filters over a message with 2,000 tags. A probe asks the service's /healthz every 10 ms
// while each input's requests run; its slowest answer is how long the loop was held. The baseline is the
// same probe while the thousand endpoints get the same message with no filters (the fan-out's own cost).

const PROBE_EVERY_MS = 10;
const NASTY = '[ab]*a[ab]{20,24}[cd]';

/** Runs `work` while /healthz is asked every PROBE_EVERY_MS; answers its slowest answer in ms. */
async function probed(url: string, work: () => Promise<void>): Promise<number> {
  let running = true;
  let slowest = 0;
  const probe = (async () => {
    while (running) {
      const sent = nowMs();
      const reply = await request(`${url}/healthz`);
      await reply.body.dump();
      slowest = Math.max(slowest, nowMs() - sent);
      await sleep(PROBE_EVERY_MS);
    }
  })();
  try {
    await work();
  } finally {
    running = false;
    await probe;
  }
  return slowest;
}

export async function hostileFilters(ctx: Context): Promise<ScenarioResult> {
  const n = ctx.sizes.fanoutEndpoints;
  const rounds = ctx.quick ? 2 : 5;
  const herald = await startHerald(
    heraldOptions(ctx, { name: 'hostile-filters', role: 'api', dataDir: tempDir('herald-bench-filters-') }),
  );
  try {
    ctx.log(`  creating ${2 * n + 2} endpoints`);
    const filters = [
      { $or: Array.from({ length: 10 }, () => ({ 'data.s': { $regex: NASTY } })) },
      { 'data.a': { $all: Array.from({ length: 256 }, (_, i) => i) } },
    ];
    // Applications: 0 and 1 one endpoint each with a costly filter, 2 n endpoints with ordinary filters,
    // 3 n endpoints without filters.
    const setup = await setupOrg(
      herald.url!,
      4,
      n,
      () => 'http://127.0.0.1:9/hook',
      (a, e) =>
        a < 2
          ? { filter: filters[a] }
          : a === 2
            ? {
                filter: {
                  'data.amount': { $gt: e },
                  'data.tags': { $in: Array.from({ length: 50 }, (_, i) => `e${e}-${i}`) },
                },
              }
            : {},
    );
    const api = new Api(herald.url!, setup.key);
    const [regexApp, allApp, thousandApp, plainApp] = setup.appIds as [string, string, string, string];
    const emit = (appId: string, payload: object) =>
      api.post('/api/v1/messages', { app_id: appId, event_type: 'invoice.paid', payload });
    const tryFilter = (appId: string, payload: object) =>
      api.post(
        `/api/v1/endpoints/${setup.endpointIds[setup.appIds.indexOf(appId) * n]}/filter-test`,
        { payload },
        [200, 400],
      );
    const s = 'ab'.repeat(200_000);
    const a = Array.from({ length: 60_000 }, (_, i) => 1_000 + (i % 1_000));
    const tags = Array.from({ length: 2_000 }, (_, i) => `t${i}`);
    const inputs: Record<string, () => Promise<void>> = {
      regex: async () => {
        await tryFilter(regexApp, { s });
        await emit(regexApp, { s });
      },
      all: async () => {
        await tryFilter(allApp, { a });
        await emit(allApp, { a });
      },
      thousand: async () => void (await emit(thousandApp, { amount: 5_000, tags })),
      plain: async () => void (await emit(plainApp, { amount: 5_000, tags })),
    };
    const held: Record<string, number[]> = { regex: [], all: [], thousand: [], plain: [], idle: [] };
    // Rounds alternate the inputs, so a drift of the machine falls on each.
    for (let r = 0; r < rounds; r++) {
      for (const [name, work] of Object.entries(inputs)) held[name]!.push(await probed(herald.url!, work));
      held.idle!.push(await probed(herald.url!, () => sleep(300)));
    }
    const median = (name: string) => round(summarize(held[name]!).p50);
    const worst = (name: string) => round(Math.max(...held[name]!));
    const peak = await stopAll(herald);
    const most = Math.max(median('regex'), median('all'), median('thousand'));
    return {
      name: 'hostile-filters',
      title: `Hostile content filters: the event loop while issue 42's three inputs run (SQLite, API role, ${n} endpoints)`,
      store: 'sqlite',
      figures: {
        regexHeldMs: median('regex'),
        regexHeldWorstMs: worst('regex'),
        allHeldMs: median('all'),
        allHeldWorstMs: worst('all'),
        thousandFiltersHeldMs: median('thousand'),
        thousandFiltersHeldWorstMs: worst('thousand'),
      },
      baseline: { plainFanoutHeldMs: median('plain'), idleHeldMs: median('idle') },
      ratios: { thousandFiltersVsPlainFanout: round(median('thousand') / median('plain')) },
      peakRssMb: mb(peak),
      targets: [target('hostile filters: event loop held (median round)', '< 100 ms', most, most < 100)],
      notes: [
        `${rounds} alternating rounds; held = the slowest /healthz answer of a probe every ${PROBE_EVERY_MS} ms while ` +
          'the input ran (regex and all: a filter-test and an emit; thousand: an emit that fans out to every endpoint)',
        'baseline: the same probe while the emit fans out to as many endpoints without filters, and while nothing runs',
      ],
      seconds: 0,
    };
  } finally {
    await stopAll(herald);
  }
}
