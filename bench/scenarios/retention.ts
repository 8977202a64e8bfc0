import pg from 'pg';
import { request } from 'undici';
import { createDatabase, withClient, type BenchDatabase } from '../lib/pg.js';
import { emitBody, setupOrg, type Herald } from '../lib/herald.js';
import { tempDir } from '../lib/procs.js';
import { nowMs, round, sleep, summarize } from '../lib/stats.js';
import { mb, target, type Context, type ScenarioResult } from '../lib/context.js';
import { heraldOptions, startHerald, stopAll } from './common.js';
import { dropExpired, makePartition } from '../../src/store/partitions/postgres.js';
import { partitionHistory } from '../../src/store/partitions/convert.js';
import { DAY_MS, PARTITIONED, legacyName, partitionName } from '../../src/domain/partitions.js';
import { idFloor } from '../../src/domain/ids.js';
import { loadConfig } from '../../src/config.js';
import { Store } from '../../src/store/index.js';
import { purgeExpired } from '../../src/store/retention.js';
import { Kysely, PostgresDialect } from 'kysely';

// Retention on PostgreSQL at scale, with the history tables partitioned (`herald partition`): days of
// history as the lean delivery log keeps it (messages,
// payloads, deliveries with their first attempt on the row, a few attempt rows), written in bulk by SQL,
// then the oldest day removed twice, from two copies of the same database: by dropping its partitions
// (src/store/partitions/) and by the row purge (src/store/retention.ts). Each is timed, its WAL counted,
// and emits run throughout, their p99 beside a window with no retention at all. Emits and a delivery's
// read on the loaded database are set beside the same on an empty one.

const DAYS = 10;
/** A delivery in this many has a failed first attempt and a second that delivered: two attempt rows. */
const RETRIED_ONE_IN = 50;
const EMIT_RATE = 200;
/**
 * How long the row purge of the first day may run (BENCH_RETENTION_DELETE_CAP, seconds; 600) before it is ended
 * and its time and WAL are scaled to the day's rows: at full size it runs past an hour on this machine.
 */
const deleteCapMs = Number(process.env.BENCH_RETENTION_DELETE_CAP ?? 600) * 1000;
/** The row purge that emits run beside ends after this long: a window for their p99, not the whole day. */
const EMIT_WINDOW_CAP_MS = 60_000;

/** An id as src/domain/ids.ts makes them, in SQL: 10 base-32 digits of ms, then 16 of `n`. */
const ID_FUNCTION = `create function bench_id(prefix text, ms bigint, n bigint) returns text language sql immutable as $$
  select prefix
    || (select string_agg(substr('0123456789abcdefghjkmnpqrstvwxyz', ((ms >> (5 * i)) & 31)::int + 1, 1), '' order by i desc)
        from generate_series(0, 9) i)
    || (select string_agg(substr('0123456789abcdefghjkmnpqrstvwxyz', ((n >> (5 * i)) & 31)::int + 1, 1), '' order by i desc)
        from generate_series(0, 15) i)
$$`;

/** A first attempt's request headers as the log keeps them: derivable lines by name only (request-headers.ts). */
const REQUEST_HEADERS = [
  '@content-type',
  '@user-agent',
  '@webhook-id',
  'webhook-timestamp: 1796316454',
  'webhook-signature: v1,a2ZqAqukuzmKrkMkJPIoBgc2PjlqGEdvWkHLuAvlvMo=',
  'traceparent: 00-01a23ccddf611f5641f1fa6cfaddb249-7b19602279549e97-01',
].join('\n');

interface Loaded {
  orgId: string;
  appId: string;
  endpointId: string;
  key: string;
  /** The first day's start: the day the retention removes. */
  firstDay: number;
  loadMs: number;
  deliveryIds: string[];
}

/** Replaces the empty first partitions by one a day from `firstDay` on, through three days ahead. */
async function dayPartitions(db: Kysely<any>, firstDay: number, now: number): Promise<void> {
  for (const table of PARTITIONED) {
    await db.schema.dropTable(legacyName(table.table)).execute();
    for (let from = firstDay; from < Math.floor(now / DAY_MS) * DAY_MS + 4 * DAY_MS; from += DAY_MS)
      await makePartition(db, table, { from, to: from + DAY_MS });
  }
}

/** Deliveries a read sample takes from each day. */
const SAMPLE_PER_DAY = 20;

/**
 * Partitions a database by day from `firstDay` and writes `perDay` deliveries a day into it (bulkLoad);
 * how long the writing took, ms.
 */
async function loadHistory(
  url: string,
  setup: { orgId: string; appIds: string[]; endpointIds: string[]; key: string },
  firstDay: number,
  now: number,
  perDay: number,
): Promise<number> {
  const kysely = new Kysely<any>({
    dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 2 }) }),
  });
  try {
    await partitionHistory(kysely, Date.now());
    await dayPartitions(kysely, firstDay, now);
  } finally {
    await kysely.destroy();
  }
  const started = nowMs();
  await withClient(url, (client) =>
    bulkLoad(
      client,
      { orgId: setup.orgId, appId: setup.appIds[0]!, endpointId: setup.endpointIds[0]!, key: setup.key, firstDay },
      perDay,
    ),
  );
  return nowMs() - started;
}

/** The deliveries a read p50 reads: SAMPLE_PER_DAY of each day's history, from its middle on. */
function readSample(url: string, firstDay: number): Promise<string[]> {
  return withClient(url, async (client) => {
    const ids: string[] = [];
    for (let day = 0; day < DAYS; day++) {
      const { rows } = await client.query<{ id: string }>(
        'select id from deliveries where id >= $1 order by id limit $2',
        [idFloor('delivery', firstDay + day * DAY_MS + DAY_MS / 2), SAMPLE_PER_DAY],
      );
      ids.push(...rows.map((row) => row.id));
    }
    return ids;
  });
}

/** Writes `perDay` deliveries a day for DAYS days, with their messages, payloads and attempts, by SQL. */
async function bulkLoad(client: pg.Client, loaded: Omit<Loaded, 'loadMs' | 'deliveryIds'>, perDay: number) {
  await client.query(ID_FUNCTION);
  const { orgId, appId, endpointId, firstDay } = loaded;
  const step = Math.floor(DAY_MS / perDay);
  for (let day = 0; day < DAYS; day++) {
    const start = firstDay + day * DAY_MS;
    const base = day * perDay;
    // Half a step in from the day's start: no row sits on a day's boundary, where the retention's cutoff
    // (now less the retention, read a few milliseconds apart by the bench and the store) may fall either side.
    const rows = `from generate_series(0, ${perDay - 1}) k, lateral (select ${start + Math.floor(step / 2)}::bigint + k * ${step} as t, ${base}::bigint + k as n) x`;
    await client.query(
      `insert into messages (id, org_id, livemode, app_id, event_type, created_at)
      select bench_id('evt_', t, n), $1, 0, $2, 'invoice.paid', t ${rows}`,
      [orgId, appId],
    );
    await client.query(`insert into payloads (message_id, body, created_at)
      select bench_id('evt_', t, n), '{"invoice_id":"inv_' || n || '","amount":4200,"currency":"usd","customer":"cus_8Dj2kL","lines":[{"sku":"pro-monthly","qty":1}]}', t ${rows}`);
    await client.query(
      `insert into deliveries (id, org_id, livemode, app_id, message_id, endpoint_id, status, attempt_count, attempt_seq,
        schedule_step, created_at, updated_at, first_attempt_id, first_attempt_at, first_duration_ms, first_response_status,
        first_response_body, first_request_headers, first_response_headers)
      select bench_id('dlv_', t, n), $1, 0, $2, bench_id('evt_', t, n), $3, 'success',
        case when n % ${RETRIED_ONE_IN} = 0 then 2 else 1 end, case when n % ${RETRIED_ONE_IN} = 0 then 2 else 1 end,
        1, t, t + 40,
        case when n % ${RETRIED_ONE_IN} = 0 then null else bench_id('atm_', t + 40, n) end,
        case when n % ${RETRIED_ONE_IN} = 0 then null else t + 40 end,
        case when n % ${RETRIED_ONE_IN} = 0 then null else 35 end,
        case when n % ${RETRIED_ONE_IN} = 0 then null else 200 end,
        case when n % ${RETRIED_ONE_IN} = 0 then null else 'ok' end,
        case when n % ${RETRIED_ONE_IN} = 0 then null else $4 end,
        case when n % ${RETRIED_ONE_IN} = 0 then null else 'content-type: text/plain' end
      ${rows}`,
      [orgId, appId, endpointId, REQUEST_HEADERS],
    );
    for (const [number, status, offset] of [
      [1, 'failed', 40],
      [2, 'success', 5_040],
    ] as const) {
      await client.query(
        `insert into attempts (id, delivery_id, endpoint_id, attempt_number, trigger, status, response_status,
          response_body, error, duration_ms, created_at, request_headers, response_headers)
        select bench_id('atm_', t + ${offset}, n * 2 + ${number}), bench_id('dlv_', t, n), $1, ${number}, 'scheduled', '${status}',
          ${status === 'failed' ? 503 : 200}, '${status === 'failed' ? 'unavailable' : 'ok'}', ${status === 'failed' ? "'HTTP 503'" : 'null'},
          35, t + ${offset}, $2, 'content-type: text/plain'
        ${rows} where n % ${RETRIED_ONE_IN} = 0`,
        [endpointId, REQUEST_HEADERS],
      );
    }
  }
  // Vacuumed as an old database is: no autovacuum of the fresh rows runs (and writes WAL) beside what is measured.
  await client.query('vacuum analyze');
}

/** Emits at EMIT_RATE a second, open loop, until `until` settles; the latencies of those that ended, ms. */
async function emitsUntil(url: string, key: string, appId: string, until: Promise<unknown>): Promise<number[]> {
  const latencies: number[] = [];
  let done = false;
  void until.finally(() => (done = true));
  const inFlight: Promise<void>[] = [];
  const started = nowMs();
  let n = 0;
  while (!done) {
    const due = started + (n * 1000) / EMIT_RATE;
    const wait = due - nowMs();
    if (wait > 0) await sleep(wait);
    const at = nowMs();
    inFlight.push(
      request(`${url}/api/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: emitBody(appId, n),
      }).then(
        async (response) => {
          await response.body.dump();
          if (response.statusCode < 300) latencies.push(nowMs() - at);
        },
        () => {},
      ),
    );
    n++;
  }
  await Promise.all(inFlight);
  return latencies;
}

/** Rows of the first day in the tables the purge deletes from (its partitions, on the copy). */
function firstDayRows(url: string, firstDay: number): Promise<number> {
  return withClient(url, async (client) => {
    let rows = 0;
    for (const table of PARTITIONED) {
      const { rows: counted } = await client.query<{ n: string }>(
        `select count(*) as n from ${partitionName(table.table, firstDay)}`,
      );
      rows += Number(counted[0]!.n);
    }
    return rows;
  });
}

/** p50 of reading each delivery, one after another. */
async function readP50(url: string, key: string, ids: string[]): Promise<number> {
  const times: number[] = [];
  for (const id of ids) {
    const at = nowMs();
    const response = await request(`${url}/api/v1/deliveries/${id}`, { headers: { authorization: `Bearer ${key}` } });
    await response.body.dump();
    if (response.statusCode === 200) times.push(nowMs() - at);
  }
  return summarize(times).p50;
}

const walLsn = async (client: pg.Client) =>
  (await client.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn')).rows[0]!.lsn;
const walBytes = async (client: pg.Client, from: string) =>
  Number(
    (await client.query<{ n: string }>('select pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::bigint as n', [from]))
      .rows[0]!.n,
  );
const databaseMb = async (client: pg.Client) =>
  mb(Number((await client.query<{ n: string }>('select pg_database_size(current_database()) as n')).rows[0]!.n));

/** How long `run` took and the WAL written meanwhile (nothing else writes while it runs). */
async function measured<T>(url: string, run: () => Promise<T>): Promise<{ result: T; ms: number; walBytes: number }> {
  return withClient(url, async (client) => {
    const lsn = await walLsn(client);
    const started = nowMs();
    const result = await run();
    const ms = nowMs() - started;
    return { result, ms, walBytes: await walBytes(client, lsn) };
  });
}

/** An API process on `database`, with its organization, application and endpoint (a receiver that answers 200). */
async function apiOn(ctx: Context, name: string, database: BenchDatabase) {
  const herald = await startHerald(
    heraldOptions(ctx, { name, role: 'api', dataDir: tempDir('herald-bench-retention-'), databaseUrl: database.url }),
  );
  return herald;
}

export async function retention(ctx: Context): Promise<ScenarioResult> {
  // BENCH_RETENTION_DELIVERIES sizes the history otherwise (a shorter full-size run, say).
  const perDay = Math.floor(Number(process.env.BENCH_RETENTION_DELIVERIES ?? ctx.sizes.retentionDeliveries) / DAYS);
  const now = Date.now();
  const firstDay = Math.floor(now / DAY_MS) * DAY_MS - DAYS * DAY_MS;
  // The retention that leaves the first `days` days past it, as of the moment it is asked.
  /** The retention that leaves the first `days` days behind it now (the row purge reads the clock again). */
  const cutoffAge = (days: number) => Date.now() - (firstDay + days * DAY_MS);
  /**
   * Drops what retention drops at `now` when the first `days` days are past it: one reading of the clock for
   * both, or a millisecond between two readings leaves the last day's end after the cutoff.
   */
  const dropDays = (db: Kysely<any>, days: number) => {
    const now = Date.now();
    return dropExpired(db, now, now - (firstDay + days * DAY_MS));
  };
  // A fresh process's first emits (its statements prepared, its code optimized) are no one's p99: each API
  // process emits this long before its emits are measured.
  const warmUpMs = ctx.quick ? 500 : 3_000;
  /** How long the quiet emits of the loaded and the empty store are measured (their p50 and p99 compared). */
  const quietMs = ctx.quick ? 2_000 : 10_000;
  const services: Herald[] = [];
  const figures: Record<string, number> = {};
  const baseline: Record<string, number> = {};
  try {
    // The loaded database: its schema and organization through the service, its history in bulk.
    const loadedDb = await createDatabase('retention');
    let api = await apiOn(ctx, 'retention-api', loadedDb);
    const setup = await setupOrg(api.url!, 1, 1, () => `${ctx.receiver.url}/retention`);
    await stopAll(api);
    ctx.log(`  loading ${perDay * DAYS} deliveries over ${DAYS} days`);
    const loadMs = await loadHistory(loadedDb.url, setup, firstDay, now, perDay);
    figures.deliveries = perDay * DAYS;
    figures.bulkLoadSeconds = round(loadMs / 1000, 1);
    figures.databaseMb = await withClient(loadedDb.url, databaseMb);
    const sample = await readSample(loadedDb.url, firstDay);

    // The copy the row purge works on.
    ctx.log('  copying the database');
    const copyDb = await createDatabase('retention_copy');
    await withClient(loadedDb.url.replace(/\/[^/]*$/, '/postgres'), async (client) => {
      const source = new URL(loadedDb.url).pathname.slice(1);
      const copy = new URL(copyDb.url).pathname.slice(1);
      await client.query(`drop database ${copy}`);
      await client.query(`create database ${copy} template ${source}`);
    });

    // Emits and reads on the loaded database, then while its first day's partitions are dropped.
    api = await apiOn(ctx, 'retention-api', loadedDb);
    services.push(api);
    const emitOn = (url: string, until: Promise<unknown>) => emitsUntil(url, setup.key, setup.appIds[0]!, until);
    // Emits from half a second before `work` starts until a second after it ends: their p99, ms.
    const emitP99During = async (url: string, work: () => Promise<unknown>) =>
      round(
        summarize(
          await emitOn(
            url,
            sleep(500)
              .then(work)
              .then(() => sleep(1_000)),
          ),
        ).p99,
      );
    const warm = (url: string) => emitOn(url, sleep(warmUpMs));
    await warm(api.url!);
    const quiet = summarize(await emitOn(api.url!, sleep(quietMs)));
    figures.emitP50Ms = round(quiet.p50);
    figures.emitP99Ms = round(quiet.p99);
    figures.readP50Ms = round(await readP50(api.url!, setup.key, sample));
    // The first day dropped alone (its time and WAL), then the second with emits running (their p99).
    const dropDb = new Kysely<any>({
      dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: loadedDb.url, max: 1 }) }),
    });
    try {
      ctx.log('  dropping the first day, then the second beside emits');
      const first = await measured(loadedDb.url, () => dropDays(dropDb, 1));
      figures.partitionsDropped = first.result.length;
      figures.dropMs = round(first.ms, 1);
      figures.dropWalKb = round(first.walBytes / 1024, 1);
      figures.emitP99DuringDropMs = await emitP99During(api.url!, () => dropDays(dropDb, 2));
    } finally {
      await dropDb.destroy();
    }
    figures.heraldPeakRssMb = mb(api.child.peakRss());
    await stopAll(api);
    services.length = 0;

    // The same days' rows deleted by the row purge (src/store/retention.ts) on the copy: the first alone,
    // the second with emits running.
    const copyApi = await apiOn(ctx, 'retention-copy-api', copyDb);
    services.push(copyApi);
    const store = await Store.open(
      loadConfig({
        HERALD_DATABASE_URL: copyDb.url,
        HERALD_SECRET_KEY: 'bench-secret-key-that-is-long-enough-0123456789',
        HERALD_DATA_DIR: tempDir('herald-bench-retention-store-'),
        HERALD_LOG_LEVEL: 'silent',
      }),
    );
    /** The row purge of the first `days` days, ended between batches once it has run `capMs`. */
    const purge = (days: number, capMs: number) => {
      const started = nowMs();
      return purgeExpired(
        store.ctx,
        { retentionMs: cutoffAge(days), auditRetentionMs: 365 * DAY_MS },
        undefined,
        () => nowMs() - started >= capMs,
      );
    };
    try {
      const dayRows = await firstDayRows(copyDb.url, firstDay);
      ctx.log(`  deleting the first day's ${dayRows} rows on the copy (at most ${deleteCapMs / 1000} s)`);
      const first = await measured(copyDb.url, () => purge(1, deleteCapMs));
      const deleted = first.result.deliveries + first.result.messages + first.result.payloads + first.result.attempts;
      // A purge the cap ended is scaled to the whole day by rows: the rows left (the purge's later steps,
      // payloads and messages) are taken to go at the rate of those deleted.
      const scale = deleted < dayRows ? dayRows / Math.max(deleted, 1) : 1;
      figures.rowsDeleted = dayRows;
      figures.rowsDeletedInCap = deleted;
      baseline.deleteMs = round(first.ms * scale, 1);
      baseline.deleteWalKb = round((first.walBytes * scale) / 1024, 1);
      await warm(copyApi.url!);
      baseline.emitP99DuringDeleteMs = await emitP99During(copyApi.url!, () => purge(2, EMIT_WINDOW_CAP_MS));
    } finally {
      await store.close();
    }
    await stopAll(copyApi);
    services.length = 0;
    await copyDb.drop();

    // An empty database, partitioned the same way and holding only its read sample's worth of the same
    // history (twice SAMPLE_PER_DAY a day: a sample starts at each day's middle): emits and a delivery's
    // read, the loaded database's size apart.
    const emptyDb = await createDatabase('retention_empty');
    let emptyApi = await apiOn(ctx, 'retention-empty-api', emptyDb);
    const empty = await setupOrg(emptyApi.url!, 1, 1, () => `${ctx.receiver.url}/retention`);
    await stopAll(emptyApi);
    await loadHistory(emptyDb.url, empty, firstDay, now, 2 * SAMPLE_PER_DAY);
    emptyApi = await apiOn(ctx, 'retention-empty-api', emptyDb);
    services.push(emptyApi);
    await emitsUntil(emptyApi.url!, empty.key, empty.appIds[0]!, sleep(warmUpMs));
    const emptyEmits = summarize(await emitsUntil(emptyApi.url!, empty.key, empty.appIds[0]!, sleep(quietMs)));
    baseline.emptyEmitP50Ms = round(emptyEmits.p50);
    baseline.emptyReadP50Ms = round(await readP50(emptyApi.url!, empty.key, await readSample(emptyDb.url, firstDay)));
    await stopAll(emptyApi);
    services.length = 0;
    await emptyDb.drop();
    await loadedDb.drop();

    const ratios = {
      dropFasterThanDelete: round(baseline.deleteMs / Math.max(figures.dropMs, 0.1), 1),
      deleteWalVsDrop: round(baseline.deleteWalKb / Math.max(figures.dropWalKb, 0.1), 1),
      emitP99DuringDropVsQuiet: round(figures.emitP99DuringDropMs / figures.emitP99Ms),
      emitP50LoadedVsEmpty: round(figures.emitP50Ms / baseline.emptyEmitP50Ms),
      readP50LoadedVsEmpty: round(figures.readP50Ms / baseline.emptyReadP50Ms),
    };
    return {
      name: 'retention',
      title: `Retention of the oldest of ${DAYS} days, ${perDay * DAYS} deliveries: partitions dropped vs rows deleted (PostgreSQL)`,
      store: 'postgres',
      figures,
      baseline,
      ratios,
      peakRssMb: figures.heraldPeakRssMb,
      targets: [
        target(
          'drop at least 100x faster than deleting the rows',
          '>= 100x',
          ratios.dropFasterThanDelete,
          ratios.dropFasterThanDelete >= 100,
        ),
        target('drop writes at least 100x less WAL', '>= 100x', ratios.deleteWalVsDrop, ratios.deleteWalVsDrop >= 100),
        target(
          'emit p99 during the drop vs without',
          '<= 1.2x',
          ratios.emitP99DuringDropVsQuiet,
          ratios.emitP99DuringDropVsQuiet <= 1.2,
        ),
        target(
          'emit p50, loaded vs empty database',
          '<= 1.2x',
          ratios.emitP50LoadedVsEmpty,
          ratios.emitP50LoadedVsEmpty <= 1.2,
        ),
        target(
          'delivery read p50, loaded vs empty database',
          '<= 1.2x',
          ratios.readP50LoadedVsEmpty,
          ratios.readP50LoadedVsEmpty <= 1.2,
        ),
      ],
      notes: [
        `The first day's ${figures.partitionsDropped} partitions dropped in ${figures.dropMs} ms; the same rows (${figures.rowsDeleted}) deleted in ${baseline.deleteMs} ms${figures.rowsDeletedInCap < figures.rowsDeleted ? ` (scaled by rows: the purge was ended after ${deleteCapMs / 1000} s with ${figures.rowsDeletedInCap} deleted)` : ''}. Emit p99s: the second day dropped, or deleted (at most ${EMIT_WINDOW_CAP_MS / 1000} s of it), while emits ran at ${EMIT_RATE}/s.`,
        `Bulk load: ${figures.bulkLoadSeconds} s; database ${figures.databaseMb} MB before retention.`,
      ],
      seconds: 0,
    };
  } finally {
    await stopAll(...services);
  }
}
