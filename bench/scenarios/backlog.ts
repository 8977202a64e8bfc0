import { Api, emitBody, setupOrg, type Setup } from '../lib/herald.js';
import { insertBacklog } from '../lib/backlog.js';
import { tempDir } from '../lib/procs.js';
import { nowMs, round, summarize } from '../lib/stats.js';
import { mb, target, type Context, type ScenarioResult } from '../lib/context.js';
import { heraldOptions, startHerald, stopAll } from './common.js';

interface Probe {
  emitP50: number;
  emitP99: number;
  deliverP50: number;
  deliverP99: number;
  startupMs: number;
  insertSeconds: number;
  peak: number;
}

interface Org {
  dataDir: string;
  setup: Setup;
}

/**
 * Starts Herald (role all) on `dataDir` and sends `samples` emits one at a time: emit latency, and the time
 * from the emit's send until the receiver has it (claim + load + send of a due attempt).
 */
async function probe(ctx: Context, label: string, org: Org | null, rows: number): Promise<Probe & Org> {
  const dataDir = org?.dataDir ?? tempDir('herald-bench-backlog-');
  let insertSeconds = 0;
  if (org && rows > 0) {
    ctx.log(`  inserting ${rows} future deliveries`);
    insertSeconds = insertBacklog(dataDir, rows, {
      orgId: org.setup.orgId,
      appId: org.setup.appIds[0]!,
      endpointId: org.setup.endpointIds[0]!,
    });
  }
  const spawned = nowMs();
  const herald = await startHerald(heraldOptions(ctx, { name: label, role: 'all', dataDir }));
  const startupMs = nowMs() - spawned;
  try {
    const setup = org?.setup ?? (await setupOrg(herald.url!, 1, 1, () => `${ctx.receiver.url}/backlog/0`));
    const api = new Api(herald.url!, setup.key);
    await ctx.receiver.reset();
    const emits: number[] = [];
    const deliveries: number[] = [];
    const warmup = 10;
    for (let i = 0; i < warmup + ctx.sizes.backlogSamples; i++) {
      const sent = nowMs();
      await api.post('/api/v1/messages', JSON.parse(emitBody(setup.appIds[0]!, i)));
      const answered = nowMs();
      const arrived = await ctx.receiver.waitFor(i + 1, 30_000);
      if (i >= warmup) {
        emits.push(answered - sent);
        deliveries.push(arrived - sent);
      }
    }
    const e = summarize(emits);
    const d = summarize(deliveries);
    const peak = await stopAll(herald);
    return {
      dataDir,
      setup,
      emitP50: e.p50,
      emitP99: e.p99,
      deliverP50: d.p50,
      deliverP99: d.p99,
      startupMs: round(startupMs, 0),
      insertSeconds: round(insertSeconds, 1),
      peak,
    };
  } finally {
    await stopAll(herald);
  }
}

export async function backlog(ctx: Context): Promise<ScenarioResult> {
  const rows = ctx.sizes.backlog;
  // The same store twice: first empty, then (service stopped) filled with the future deliveries.
  const empty = await probe(ctx, 'backlog-empty', null, 0);
  const full = await probe(ctx, 'backlog-full', empty, rows);
  const emitRatio = round(full.emitP50 / empty.emitP50);
  const deliverRatio = round(full.deliverP50 / empty.deliverP50);
  return {
    name: 'backlog',
    title: `${rows.toLocaleString('en')} future deliveries queued (SQLite, role all)`,
    store: 'sqlite',
    figures: {
      backlogRows: rows,
      emitP50Ms: full.emitP50,
      emitP99Ms: full.emitP99,
      emitToArrivalP50Ms: full.deliverP50,
      emitToArrivalP99Ms: full.deliverP99,
      startupMs: full.startupMs,
      insertSeconds: full.insertSeconds,
    },
    baseline: {
      emitP50Ms: empty.emitP50,
      emitP99Ms: empty.emitP99,
      emitToArrivalP50Ms: empty.deliverP50,
      emitToArrivalP99Ms: empty.deliverP99,
      startupMs: empty.startupMs,
    },
    ratios: {
      emitP50VsEmpty: emitRatio,
      emitToArrivalP50VsEmpty: deliverRatio,
      emitP99VsEmpty: round(full.emitP99 / empty.emitP99),
      emitToArrivalP99VsEmpty: round(full.deliverP99 / empty.deliverP99),
    },
    peakRssMb: mb(Math.max(empty.peak, full.peak)),
    targets: [
      target('backlog: emit p50 vs empty store', '<= 2.0x', emitRatio, emitRatio <= 2),
      target('backlog: emit-to-arrival p50 vs empty store', '<= 2.0x', deliverRatio, deliverRatio <= 2),
      target(
        'backlog peak RSS',
        '< 300 MB',
        mb(Math.max(empty.peak, full.peak)),
        mb(Math.max(empty.peak, full.peak)) < 300,
      ),
    ],
    notes: [
      `${ctx.sizes.backlogSamples} sequential emits after 10 warm-up ones; baseline = the same on an empty store`,
    ],
    seconds: 0,
  };
}
