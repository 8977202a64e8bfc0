import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { wavesHeld } from '../../src/delivery/worker.js';
import { Store } from '../../src/store/index.js';
import { LoadClient, SECRET_KEY, startHerald, stopAll, type HeraldProcess } from './processes.js';
import { createPgCluster, type PgCluster } from './pg-cluster.js';
import { Receiver } from './receiver.js';
import { bootstrap } from './client.js';

// The chaos suite (issue 26, part 2): Herald as separate processes on one store under a steady emit load,
// API and worker processes SIGKILLed in a loop and, on PostgreSQL, the database restarted once in the
// middle; then the load stops, everything is started again and left to settle, and the invariants below
// are checked. `npm run chaos` (scripts/chaos.ts) and test/chaos/chaos.test.ts both run `runChaos`.
//
// Invariants (each violation is a line in `report.violations`):
// - every acknowledged message reaches every endpoint subscribed to it, and none reaches the endpoint
//   that is not subscribed;
// - one idempotency key is acknowledged with one message id only, and the store holds exactly one message
//   per key (the load retries each emit with its key until it is acknowledged, so nothing saved is
//   unacknowledged);
// - a message reaches an endpoint more than once only when an interruption (a worker killed, the database
//   restarted) fell between its first and its last arrival, and no more often than the interruptions
//   times the attempts a worker may hold claimed (HERALD_CONCURRENCY times the waves it holds: each may
//   have been sent, its outcome not yet recorded);
// - no delivery is left `pending` without a task queued for it.

export type ChaosStore = 'sqlite' | 'postgres';

export interface ChaosOptions {
  store: ChaosStore;
  /** How long the load and the kills run, at least. */
  seconds: number;
  /** Processes killed at least: the load and the kills go on past `seconds` until this many were (default 0). */
  minKills?: number;
  seed: number;
  /** Progress lines (the CLI prints them; the test passes t.diagnostic). */
  log?: (line: string) => void;
  /** How long the settle phase may take before missing arrivals count as lost. */
  settleSeconds?: number;
}

export interface ChaosReport {
  store: ChaosStore;
  seed: number;
  seconds: number;
  emitRequests: number;
  emitRetries: number;
  keys: number;
  acked: number;
  /** Replays of an acknowledged key that answered another id (must be 0). */
  keyConflicts: number;
  storedMessages: number;
  /** (message, endpoint) pairs that should arrive / did arrive. */
  expectedArrivals: number;
  delivered: number;
  missing: number;
  unsubscribedArrivals: number;
  duplicates: number;
  unexplainedDuplicates: number;
  duplicateBound: number;
  apiKills: number;
  workerKills: number;
  databaseRestarts: number;
  pending: number;
  pendingWithoutTask: number;
  violations: string[];
}

/** Requests one worker process may have open (HERALD_CONCURRENCY in the chaos runs). */
const IN_FLIGHT = 16;
const SUBSCRIBED = 2;

/** mulberry32: a small seeded generator, so a run's kill order can be replayed with its seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Interruption {
  what: string;
  from: number;
  to: number;
}

interface World {
  env: Record<string, string>;
  cluster: PgCluster | null;
  dataDir: string;
  drop(): Promise<void>;
}

async function world(store: ChaosStore): Promise<World> {
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-chaos-'));
  if (store === 'sqlite') {
    return {
      env: { HERALD_DATA_DIR: dataDir },
      cluster: null,
      dataDir,
      drop: async () => rmSync(dataDir, { recursive: true, force: true }),
    };
  }
  // A PostgreSQL server of the run's own, so restarting it touches nobody else's database.
  const cluster = await createPgCluster();
  const url = new URL(cluster.url);
  url.pathname = '/herald';
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  await admin.query('create database herald');
  await admin.end();
  return {
    env: { HERALD_DATA_DIR: dataDir, HERALD_DATABASE_URL: url.toString() },
    cluster,
    dataDir,
    drop: async () => {
      await cluster.destroy();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Runs one chaos round on `store` and returns what it saw; it never throws for a violated invariant. */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const log = options.log ?? (() => {});
  const w = await world(options.store);
  const receiver = await new Receiver().start();
  // Answers take a moment, so that a kill finds attempts in flight.
  receiver.respond = () => ({ status: 200, body: 'ok', delayMs: 50 });
  const processes: HeraldProcess[] = [];
  const loaders = new Map<HeraldProcess, LoadClient>();
  try {
    return await chaos(options, w, receiver, processes, loaders, log);
  } finally {
    await stopAll(processes);
    await Promise.all([...loaders.values()].map((l) => l.close()));
    await receiver.stop();
    await w.drop();
  }
}

async function chaos(
  options: ChaosOptions,
  w: World,
  receiver: Receiver,
  processes: HeraldProcess[],
  loaders: Map<HeraldProcess, LoadClient>,
  log: (line: string) => void,
): Promise<ChaosReport> {
  const env = {
    ...w.env,
    HERALD_LOG_LEVEL: 'error',
    HERALD_CONCURRENCY: String(IN_FLIGHT),
    // Quick retries, and an attempt timeout far above the receiver's answer time, so that on a busy
    // machine an attempt is repeated only because something was interrupted.
    HERALD_RETRY_SCHEDULE: '0s,200ms,500ms,1s,2s,2s,2s,2s,2s,2s,2s,2s',
    HERALD_ATTEMPT_TIMEOUT: '20s',
    HERALD_DB_POOL_SIZE: '5',
  };
  const perRole = options.store === 'postgres' ? 2 : 1;
  // The kills and the load draw from generators of their own, so the seed fixes the order of the kills.
  const rand = random(options.seed);
  const loadRand = random(options.seed ^ 0x5bd1e995);
  let apiKey = '';
  const interruptions: Interruption[] = [];
  let apiKills = 0;
  let workerKills = 0;
  let databaseRestarts = 0;

  const apis: (HeraldProcess | null)[] = [];
  const workers: (HeraldProcess | null)[] = [];
  // A process that cannot open the store (the database is restarting) exits at start-up: started again
  // after a moment, as a supervisor would, for up to a minute.
  const start = async (role: 'api' | 'worker', slot: number) => {
    let p: HeraldProcess;
    for (let tries = 1; ; tries++) {
      try {
        p = await startHerald(role, env, { readyTimeoutMs: 120_000 });
        break;
      } catch (error) {
        if (tries >= 30) throw error;
        log(
          `${options.store}: ${role} ${slot} did not start (${String((error as Error).message).split('\n')[1] ?? ''}); again`,
        );
        await sleep(2_000);
      }
    }
    processes.push(p);
    if (role === 'api') {
      loaders.set(p, new LoadClient(p.url, apiKey, 8));
      apis[slot] = p;
    } else workers[slot] = p;
    return p;
  };

  // The first API process creates the schema; the others start on it.
  const first = await startHerald('api', env, { readyTimeoutMs: 120_000 });
  processes.push(first);
  const { raw, test: api } = await bootstrap(first.url);
  apiKey = raw.test_key.key as string;
  loaders.set(first, new LoadClient(first.url, apiKey, 8));
  apis[0] = first;
  const app = await api.post('/api/v1/applications', { name: 'Chaos' });
  if (app.status !== 201) throw new Error(`application: ${app.status} ${JSON.stringify(app.body)}`);
  const types = await Promise.all(
    ['invoice.paid', 'invoice.voided'].map((name) =>
      api.post('/api/v1/event-types', { name, description: `${name} (chaos)` }),
    ),
  );
  // The bootstrap route may have put either in the catalog already (409).
  for (const t of types)
    if (t.status !== 201 && t.status !== 409) throw new Error(`event type: ${t.status} ${JSON.stringify(t.body)}`);
  // Two endpoints take every event; a third only invoice.voided, which the load never emits.
  for (let i = 0; i <= SUBSCRIBED; i++) {
    const reply = await api.post('/api/v1/endpoints', {
      app_id: app.body.id,
      url: `${receiver.url}/hook/${i}`,
      ...(i === SUBSCRIBED ? { event_types: ['invoice.voided'] } : {}),
    });
    if (reply.status !== 201) throw new Error(`endpoint: ${reply.status} ${JSON.stringify(reply.body)}`);
  }
  await Promise.all([
    ...Array.from({ length: perRole - 1 }, (_, i) => start('api', i + 1)),
    ...Array.from({ length: perRole }, (_, i) => start('worker', i)),
  ]);
  log(`${options.store}: ${perRole} API and ${perRole} worker processes up, load for ${options.seconds}s`);

  // The load: lanes that emit with an idempotency key each, retry a key after a connection error or a
  // 5xx until it is acknowledged (as an SDK does), and now and then replay an acknowledged key.
  const idsByKey = new Map<string, Set<string>>();
  const acked = new Set<string>();
  let emitRequests = 0;
  let emitRetries = 0;
  let keyConflicts = 0;
  let nextKey = 0;
  let loadRunning = true;
  const loadEnds = Date.now() + options.seconds * 1000;
  const emit = async (key: string, deadline: number): Promise<string | null> => {
    for (let tries = 0; Date.now() < deadline; tries++) {
      const live = apis.filter((p): p is HeraldProcess => p?.alive() === true);
      const target = live[Math.floor(loadRand() * live.length)];
      if (!target) {
        await sleep(200);
        continue;
      }
      emitRequests++;
      if (tries > 0) emitRetries++;
      try {
        const reply = await loaders
          .get(target)!
          .post(
            '/api/v1/messages',
            { app_id: app.body.id, event_type: 'invoice.paid', payload: { key } },
            { 'idempotency-key': key },
            15_000,
          );
        if (reply.status === 201 || reply.status === 200) {
          const ids = idsByKey.get(key) ?? new Set<string>();
          ids.add(reply.body.id);
          idsByKey.set(key, ids);
          acked.add(reply.body.id);
          return reply.body.id;
        }
        if (reply.status < 500 && reply.status !== 429)
          throw new Error(`emit answered ${reply.status}: ${JSON.stringify(reply.body)}`);
      } catch (error) {
        if ((error as Error).message.startsWith('emit answered')) throw error;
        // No answer (the process was killed): try again with the same key.
      }
      await sleep(100 + 100 * Math.min(tries, 5));
    }
    return null;
  };
  const keys: string[] = [];
  const lane = async () => {
    while (loadRunning) {
      const key = `chaos-${options.seed}-${nextKey++}`;
      keys.push(key);
      // A key in hand when the load stops is still seen through: given up, it could be a saved message
      // nobody was told about.
      await emit(key, Date.now() + 120_000);
      if (loadRand() < 0.1) await emit(key, Date.now() + 120_000);
      await sleep(30);
    }
  };
  const load = Promise.all(Array.from({ length: 3 }, lane));
  // An emit refused with a 4xx fails the run where the load is awaited, after the chaos loop.
  load.catch(() => {});

  // The chaos: a kill every few seconds, a process of a random role; the killed process is started
  // again at once. The database restarts once, halfway.
  const killEvery = Math.max(2_000, (options.seconds * 1000) / 12);
  const restarts: Promise<void>[] = [];
  const began = Date.now();
  let restarted = options.store !== 'postgres';
  // Goes on until the time is up, the database (on PostgreSQL) has restarted and minKills processes died:
  // how many kills fit in the time depends on how fast processes start on this machine.
  const more = () => Date.now() < loadEnds - 1_000 || !restarted || apiKills + workerKills < (options.minKills ?? 0);
  while (more()) {
    await sleep(killEvery * (0.5 + rand()));
    if (!more()) break;
    if (!restarted && Date.now() >= loadEnds - (options.seconds * 1000) / 2) {
      restarted = true;
      const from = Date.now();
      await w.cluster!.restart();
      databaseRestarts++;
      interruptions.push({ what: 'database restart', from, to: Date.now() });
      log(`${options.store}: database restarted in ${Date.now() - from} ms`);
      continue;
    }
    const role = rand() < 0.5 ? 'api' : 'worker';
    const slot = Math.floor(rand() * perRole);
    const victim = (role === 'api' ? apis : workers)[slot];
    if (!victim?.alive()) continue;
    victim.kill('SIGKILL');
    const at = Date.now();
    await victim.exited;
    if (role === 'api') apiKills++;
    else {
      workerKills++;
      interruptions.push({ what: `worker ${slot} killed`, from: at, to: at });
    }
    // Started again in the background, so the next kill can land while this one is still starting.
    const restart = start(role, slot).then((replaced) =>
      log(`${options.store}: ${role} ${slot} killed at ${at - began} ms, up again (${replaced.url || 'worker'})`),
    );
    // Its failure is thrown where the restarts are awaited (and the run cleaned up), not as an unhandled rejection.
    restart.catch(() => {});
    restarts.push(restart);
  }
  await Promise.all(restarts);
  loadRunning = false;
  await load;
  log(`${options.store}: load stopped, ${acked.size} acknowledged; settling`);

  // Settle: every acknowledged message at every subscribed endpoint, within a bounded wait.
  const arrivals = () => {
    const counts = new Map<string, number[]>();
    for (const r of receiver.received) {
      const pair = `${r.headers['webhook-id']} ${r.path}`;
      const list = counts.get(pair) ?? [];
      list.push(r.at);
      counts.set(pair, list);
    }
    return counts;
  };
  const expected = [...acked].flatMap((id) => Array.from({ length: SUBSCRIBED }, (_, i) => `${id} /hook/${i}`));
  const settleBy = Date.now() + (options.settleSeconds ?? 60) * 1000;
  let seen = arrivals();
  while (Date.now() < settleBy && !expected.every((pair) => seen.has(pair))) {
    await sleep(250);
    seen = arrivals();
  }
  const missing = expected.filter((pair) => !seen.has(pair));

  // The store: one message per key, and no delivery pending with nothing queued (waiting a little for the
  // last outcomes to be recorded before counting what is still pending at all).
  const store = await Store.open(loadConfig({ HERALD_SECRET_KEY: SECRET_KEY, HERALD_LOG_LEVEL: 'silent', ...w.env }));
  let storedMessages = 0;
  let pending = 0;
  let pendingWithoutTask = 0;
  try {
    const count = async () => {
      const row = await sql<{ messages: number | string; pending: number | string; orphans: number | string }>`
        select (select count(*) from messages) as messages,
               (select count(*) from deliveries where status = 'pending') as pending,
               (select count(*) from deliveries d where d.status = 'pending'
                  and d.run_at is null and d.queued_after is null) as orphans`.execute(store.ctx.db);
      storedMessages = Number(row.rows[0]!.messages);
      pending = Number(row.rows[0]!.pending);
      pendingWithoutTask = Number(row.rows[0]!.orphans);
    };
    await count();
    for (const until = Date.now() + 20_000; pending > 0 && Date.now() < until; await count()) await sleep(250);
  } finally {
    await store.close();
  }

  let duplicates = 0;
  let unexplainedDuplicates = 0;
  let unsubscribedArrivals = 0;
  for (const [pair, times] of seen) {
    if (pair.endsWith(`/hook/${SUBSCRIBED}`)) unsubscribedArrivals += times.length;
    if (times.length < 2) continue;
    duplicates += times.length - 1;
    const firstAt = Math.min(...times);
    const lastAt = Math.max(...times);
    // An arrival is recorded when its request has been read, a moment before the kill that cut its answer.
    if (!interruptions.some((i) => firstAt <= i.to + 1_000 && lastAt >= i.from))
      unexplainedDuplicates += times.length - 1;
  }
  // A killed worker cuts its own requests; a database restart cuts every worker's records. Either may
  // leave unrecorded every attempt the worker held claimed (sent, or sent and waiting for its outcome's
  // batch): its concurrency times the waves it holds.
  const held = IN_FLIGHT * wavesHeld(loadConfig({ ...env, HERALD_SECRET_KEY: SECRET_KEY }));
  const duplicateBound = (workerKills + databaseRestarts * perRole) * held;

  const violations: string[] = [];
  if (missing.length > 0)
    violations.push(
      `${missing.length} acknowledged (message, endpoint) pairs never arrived, e.g. ${missing.slice(0, 3).join(', ')}`,
    );
  if (unsubscribedArrivals > 0) violations.push(`${unsubscribedArrivals} requests reached the unsubscribed endpoint`);
  keyConflicts = [...idsByKey.values()].filter((ids) => ids.size > 1).length;
  if (keyConflicts > 0) violations.push(`${keyConflicts} idempotency keys were acknowledged with more than one id`);
  const unacked = keys.filter((k) => !idsByKey.has(k)).length;
  if (unacked > 0) violations.push(`${unacked} keys were never acknowledged within two minutes of retries`);
  if (storedMessages !== idsByKey.size)
    violations.push(`the store holds ${storedMessages} messages for ${idsByKey.size} acknowledged keys`);
  if (unexplainedDuplicates > 0)
    violations.push(`${unexplainedDuplicates} duplicate arrivals with no interruption between the first and the last`);
  if (duplicates > duplicateBound)
    violations.push(`${duplicates} duplicate arrivals, more than the bound ${duplicateBound}`);
  if (pendingWithoutTask > 0) violations.push(`${pendingWithoutTask} deliveries pending with no task queued`);
  if (apiKills + workerKills === 0) violations.push('no process was killed: the run was too short');
  if (options.store === 'postgres' && databaseRestarts === 0) violations.push('the database was never restarted');

  return {
    store: options.store,
    seed: options.seed,
    seconds: options.seconds,
    emitRequests,
    emitRetries,
    keys: keys.length,
    acked: acked.size,
    keyConflicts,
    storedMessages,
    expectedArrivals: expected.length,
    delivered: expected.length - missing.length,
    missing: missing.length,
    unsubscribedArrivals,
    duplicates,
    unexplainedDuplicates,
    duplicateBound,
    apiKills,
    workerKills,
    databaseRestarts,
    pending,
    pendingWithoutTask,
    violations,
  };
}

/** The report as a few lines of text. */
export function formatReport(r: ChaosReport): string {
  return [
    `store ${r.store}, seed ${r.seed}, ${r.seconds}s of load`,
    `  emits: ${r.keys} keys, ${r.emitRequests} requests (${r.emitRetries} retries), ${r.acked} acknowledged, ${r.keyConflicts} keys with two ids, ${r.storedMessages} messages stored`,
    `  deliveries: ${r.delivered} of ${r.expectedArrivals} arrived (${r.missing} missing), ${r.unsubscribedArrivals} at the unsubscribed endpoint`,
    `  duplicates: ${r.duplicates} (bound ${r.duplicateBound}), ${r.unexplainedDuplicates} without an interruption`,
    `  chaos: ${r.apiKills} API kills, ${r.workerKills} worker kills, ${r.databaseRestarts} database restarts`,
    `  settled: ${r.pending} deliveries pending, ${r.pendingWithoutTask} of them with no task`,
    r.violations.length === 0 ? '  every invariant held' : r.violations.map((v) => `  VIOLATED: ${v}`).join('\n'),
  ].join('\n');
}
