import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { cleanup, killAllSync, REPO, tempDir } from './lib/procs.js';
import { ReceiverProcess } from './lib/receiver.js';
import { postgresAvailable } from './lib/pg.js';
import { round } from './lib/stats.js';
import { FULL, QUICK, type Context, type ScenarioResult } from './lib/context.js';
import { markdown, printTable, writeDoc, type Failure, type RunInfo } from './lib/report.js';
import { ingest, pgIngest } from './scenarios/ingest.js';
import { delivery, pgDelivery } from './scenarios/delivery.js';
import { destinations } from './scenarios/destinations.js';
import { endToEnd, fanout, pgEndToEnd, slowEndpoint, neighbourBacklog } from './scenarios/e2e.js';
import { backlog } from './scenarios/backlog.js';
import { peers } from './scenarios/peers.js';
import { retention } from './scenarios/retention.js';
import { tracing } from './scenarios/tracing.js';
import { startup } from './scenarios/startup.js';
import { hostileFilters } from './scenarios/hostile-filters.js';
import { slowNeighbour } from './scenarios/slow-neighbour.js';

// npm run bench [-- --quick] [--scenario NAME]... [--skip-postgres] [--out DIR] [--profile]
//
// Measures Herald and its baselines side by side in one run; prints figures, ratios and targets; writes
// <out>/latest.json (default bench/results) and, for a full run of every scenario without --out, the
// generated part of docs/benchmarks.md (with --out: <out>/benchmarks.md). Every child process and temp dir
// is removed at the end, on failure, on Ctrl-C, and when the time limit runs out.

const SCENARIOS: Record<string, { run: (ctx: Context) => Promise<ScenarioResult>; postgres?: boolean }> = {
  ingest: { run: ingest },
  delivery: { run: delivery },
  e2e: { run: endToEnd },
  fanout: { run: fanout },
  backlog: { run: backlog },
  slow: { run: slowEndpoint },
  neighbour: { run: neighbourBacklog },
  tracing: { run: tracing },
  startup: { run: startup },
  'hostile-filters': { run: hostileFilters },
  'pg-ingest': { run: pgIngest, postgres: true },
  'pg-delivery': { run: pgDelivery, postgres: true },
  'pg-e2e': { run: pgEndToEnd, postgres: true },
  // PostgreSQL and Redis: left out with the PostgreSQL scenarios by --skip-postgres.
  peers: { run: peers, postgres: true },
  'slow-neighbour': { run: slowNeighbour, postgres: true },
  // The brokers, kcat and fauxqs: left out by --skip-postgres with the others that need services.
  destinations: { run: destinations, postgres: true },
  retention: { run: retention, postgres: true },
};

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    scenario: { type: 'string', multiple: true },
    'skip-postgres': { type: 'boolean', default: false },
    out: { type: 'string' },
    merge: { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    'time-limit': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  console.log(
    `usage: npm run bench -- [--quick] [--scenario ${Object.keys(SCENARIOS).join('|')}]... [--skip-postgres] [--out DIR] [--merge] [--profile] [--time-limit SECONDS]`,
  );
  process.exit(0);
}
for (const name of values.scenario ?? []) {
  if (!SCENARIOS[name]) {
    console.error(`unknown scenario ${name} (have ${Object.keys(SCENARIOS).join(', ')})`);
    process.exit(2);
  }
}

const quick = values.quick ?? false;
const outDir = resolve(values.out ?? join(REPO, 'bench', 'results'));
/** Retention at full size loads ten million deliveries and deletes a day of them: about 40 minutes alone. */
const retentionSec = !quick && (values.scenario === undefined || values.scenario.includes('retention')) ? 3600 : 0;
const timeLimitSec = Number(values['time-limit'] ?? (quick ? 240 : 1800 + retentionSec));
const started = performance.now();
const loadStart = loadavg().map((l) => round(l));

let finishing = false;
async function abort(reason: string, code: number): Promise<never> {
  if (!finishing) {
    finishing = true;
    console.error(`\nbench: ${reason}; stopping child processes and removing temp dirs`);
    await cleanup().catch(() => {});
  }
  process.exit(code);
}
process.on('exit', killAllSync);
process.on('SIGINT', () => void abort('interrupted', 130));
process.on('SIGTERM', () => void abort('terminated', 143));
const limit = setTimeout(() => void abort(`time limit of ${timeLimitSec}s reached`, 3), timeLimitSec * 1000);
limit.unref();

async function main(): Promise<number> {
  let names = values.scenario?.length ? values.scenario : Object.keys(SCENARIOS);
  const failures: Failure[] = [];
  if (values['skip-postgres']) names = names.filter((n) => !SCENARIOS[n]!.postgres);
  if (names.some((n) => SCENARIOS[n]!.postgres) && !(await postgresAvailable())) {
    for (const n of names.filter((n) => SCENARIOS[n]!.postgres))
      failures.push({ name: n, error: 'PostgreSQL is not reachable on 127.0.0.1:5432' });
    names = names.filter((n) => !SCENARIOS[n]!.postgres);
  }

  const runDir = tempDir('herald-bench-run-');
  const logDir = join(runDir, 'logs');
  const profileDir = values.profile ? join(REPO, 'bench', 'results', 'profiles') : undefined;
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  const receiver = await ReceiverProcess.start(logDir);
  const results = new Map<string, ScenarioResult>();
  const ctx: Context = {
    quick,
    sizes: quick ? QUICK : FULL,
    receiver,
    logDir,
    profileDir,
    results,
    log: (message) => console.log(message),
  };

  for (const name of names) {
    const t0 = performance.now();
    console.log(`\n▶ ${name}`);
    try {
      const result = await SCENARIOS[name]!.run(ctx);
      result.seconds = round((performance.now() - t0) / 1000, 1);
      results.set(name, result);
      console.log(`  done in ${result.seconds}s`);
    } catch (error) {
      const message = (error as Error).message ?? String(error);
      console.error(`  ${name} failed: ${message}`);
      failures.push({ name, error: message.split('\n')[0]! });
    }
  }
  await receiver.stop();

  // Scenarios in the order they were asked for (slow may have added e2e as its reference).
  const ordered = Object.keys(SCENARIOS)
    .map((n) => results.get(n))
    .filter((r): r is ScenarioResult => r !== undefined);
  const info: RunInfo = {
    date: new Date().toISOString(),
    quick,
    machine: {
      cores: cpus().length,
      cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
      node: process.version,
      platform: `${process.platform} ${process.arch}`,
      totalMemoryMb: Math.round(totalmem() / 1024 / 1024),
      loadAverageStart: loadStart,
      loadAverageEnd: loadavg().map((l) => round(l)),
    },
    seconds: round((performance.now() - started) / 1000, 1),
  };
  printTable(ordered, failures);
  const targets = ordered.flatMap((r) => r.targets.map((t) => ({ scenario: r.name, ...t })));
  let document = {
    ...info,
    scenarios: Object.fromEntries(ordered.map((r) => [r.name, r])) as Record<string, ScenarioResult>,
    targets,
    failures,
    merged: [] as string[],
  };
  // --merge: the scenarios run now replace theirs in the existing results; the rest is kept as it was.
  if (values.merge && existsSync(join(outDir, 'latest.json'))) {
    const before = JSON.parse(readFileSync(join(outDir, 'latest.json'), 'utf8')) as typeof document;
    const scenarios = { ...before.scenarios, ...document.scenarios };
    const all = Object.keys(SCENARIOS)
      .map((n) => scenarios[n])
      .filter((r): r is ScenarioResult => r !== undefined);
    const keptFailures = (before.failures ?? []).filter((f) => !names.includes(f.name) && !scenarios[f.name]);
    document = {
      ...before,
      scenarios: Object.fromEntries(all.map((r) => [r.name, r])),
      targets: all.flatMap((r) => r.targets.map((t) => ({ scenario: r.name, ...t }))),
      failures: [...keptFailures, ...failures],
      merged: [...(before.merged ?? []), ...names.map((n) => `${n} at ${info.date}`)],
    };
    ordered.splice(0, ordered.length, ...all);
    failures.splice(0, failures.length, ...document.failures);
  }
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'latest.json'), `${JSON.stringify(document, null, 2)}\n`);
  console.log(`\nwrote ${join(outDir, 'latest.json')}`);
  const everything = (values.merge || (!values.scenario?.length && !values['skip-postgres'])) && !quick;
  if (values.out) {
    writeDoc(join(outDir, 'benchmarks.md'), markdown(info, ordered, failures));
  } else if (everything) {
    const docInfo: RunInfo = values.merge
      ? {
          date: `${document.date} (re-run afterwards: ${document.merged.join('; ')})`,
          quick: document.quick,
          machine: document.machine,
          seconds: document.seconds,
        }
      : info;
    writeDoc(join(REPO, 'docs', 'benchmarks.md'), markdown(docInfo, ordered, failures));
    console.log(`wrote ${join(REPO, 'docs', 'benchmarks.md')}`);
  }
  if (profileDir)
    console.log(`CPU profiles in ${profileDir} (summarize with: node scripts/run.mjs bench/profile-summary.ts FILE)`);
  return failures.length > 0 ? 1 : 0;
}

main().then(
  async (code) => {
    finishing = true;
    await cleanup();
    process.exit(code);
  },
  (error) => abort(`failed: ${(error as Error).stack ?? error}`, 1),
);
