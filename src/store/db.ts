import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { LRUCache } from 'lru-cache';
import { CompiledQuery, Kysely, Migrator, PostgresDialect, SqliteDialect, type Migration } from 'kysely';
import type { Database } from './schema.js';
import { threadExecArgv } from '../thread-flags.js';
import { endThread } from './end-thread.js';
import { ReadsOffLoop, type OffLoopReader } from './reads-off-loop.js';
import { ensureDataDir } from '../config.js';
import * as initial from './migrations/001_initial.js';
import * as tasksByEndpoint from './migrations/002_tasks_by_endpoint.js';
import * as rotationsAndExhaustion from './migrations/003_rotations_and_exhaustion.js';
import * as portalEndpoints from './migrations/004_portal_endpoints.js';
import * as workers from './migrations/005_workers.js';
import * as portalTokenHash from './migrations/006_portal_token_hash.js';
import * as endpointControls from './migrations/007_endpoint_controls.js';
import * as eventSchemas from './migrations/008_event_schemas.js';
import * as attemptsByEndpoint from './migrations/009_attempts_by_endpoint.js';
import * as operationalWebhooks from './migrations/010_operational_webhooks.js';
import * as oneRecoveryPerEndpoint from './migrations/011_one_recovery_per_endpoint.js';
import * as nextAttemptReadFromTasks from './migrations/012_next_attempt_read_from_tasks.js';
import * as rateAsArrivalTime from './migrations/013_rate_as_arrival_time.js';
import * as roomForUpdates from './migrations/014_room_for_updates.js';
import * as outcomeEvents from './migrations/015_outcome_events.js';
import * as svixSurface from './migrations/016_svix_surface.js';
import * as traceContext from './migrations/017_trace_context.js';
import * as enterpriseReceivers from './migrations/018_enterprise_receivers.js';
import * as attemptHeaders from './migrations/019_attempt_headers.js';
import * as queueOnDeliveries from './migrations/020_queue_on_deliveries.js';
import * as firstAttemptOnDelivery from './migrations/021_first_attempt_on_delivery.js';
import * as destinations from './migrations/022_destinations.js';
import * as transformations from './migrations/023_transformations.js';
import * as firstRequestOnDelivery from './migrations/024_first_request_on_delivery.js';
import * as deliveryPolicy from './migrations/025_delivery_policy.js';
import * as circuitBreaker from './migrations/026_circuit_breaker.js';
import * as scopedKeys from './migrations/027_scoped_keys.js';
import * as auditLog from './migrations/028_audit_log.js';
import * as messageEventIds from './migrations/029_message_event_ids.js';

export type Dialect = 'sqlite' | 'postgres';

export interface OpenedDatabase {
  db: Kysely<Database>;
  /** The delivery worker's queue statements: on PostgreSQL a pool of their own (openPostgres); on SQLite `db`. */
  queueDb: Kysely<Database>;
  dialect: Dialect;
  /** PostgreSQL only: the pool, for LISTEN/NOTIFY and health checks. */
  pool: pg.Pool | null;
  /** PostgreSQL only: the queue's pool (queueDb's), for its prepared statements (queue/postgres-statements.ts). */
  queuePool: pg.Pool | null;
  /** Runs a read whose cost grows with a tenant's history without holding the event loop (reads-off-loop.ts). */
  readOffLoop: OffLoopReader;
  /** Closes the database and whatever runs beside it. */
  close(): Promise<void>;
}

// Migrations are listed here in order; a new one is a new file and a new line.
export const MIGRATIONS: Record<string, Migration> = {
  '001_initial': initial,
  '002_tasks_by_endpoint': tasksByEndpoint,
  '003_rotations_and_exhaustion': rotationsAndExhaustion,
  '004_portal_endpoints': portalEndpoints,
  '005_workers': workers,
  '006_portal_token_hash': portalTokenHash,
  '007_endpoint_controls': endpointControls,
  '008_event_schemas': eventSchemas,
  '009_attempts_by_endpoint': attemptsByEndpoint,
  '010_operational_webhooks': operationalWebhooks,
  '011_one_recovery_per_endpoint': oneRecoveryPerEndpoint,
  '012_next_attempt_read_from_tasks': nextAttemptReadFromTasks,
  '013_rate_as_arrival_time': rateAsArrivalTime,
  '014_room_for_updates': roomForUpdates,
  '015_outcome_events': outcomeEvents,
  '016_svix_surface': svixSurface,
  '017_trace_context': traceContext,
  '018_enterprise_receivers': enterpriseReceivers,
  '019_attempt_headers': attemptHeaders,
  '020_queue_on_deliveries': queueOnDeliveries,
  '021_first_attempt_on_delivery': firstAttemptOnDelivery,
  '022_destinations': destinations,
  '023_transformations': transformations,
  '024_first_request_on_delivery': firstRequestOnDelivery,
  '025_delivery_policy': deliveryPolicy,
  '026_circuit_breaker': circuitBreaker,
  '027_scoped_keys': scopedKeys,
  '028_audit_log': auditLog,
  '029_message_event_ids': messageEventIds,
};

// PostgreSQL returns bigint (int8) as strings by default; our times fit safely in a double.
pg.types.setTypeParser(20, (value: string) => Number(value));

/**
 * Prepared statements kept per connection, the least recently used dropped first. Each holds its compiled
 * program (a multi-row insert's grows with its rows), and texts that differ only in the length of an
 * `in (...)` list each make one.
 */
const STATEMENT_CACHE_SIZE = 500;

/** better-sqlite3 prepares a statement per call; caching by SQL text saves that work on hot paths. */
function withStatementCache(database: SQLite.Database): SQLite.Database {
  // The least recently used statement goes first.
  const cache = new LRUCache<string, SQLite.Statement>({ max: STATEMENT_CACHE_SIZE });
  const prepare = database.prepare.bind(database);
  database.prepare = ((sql: string) => {
    let statement = cache.get(sql);
    if (!statement) {
      statement = prepare(sql);
      cache.set(sql, statement);
    }
    return statement;
  }) as SQLite.Database['prepare'];
  return database;
}

/**
 * SQLite transactions take the write lock at BEGIN (BEGIN IMMEDIATE). A deferred BEGIN reads first and
 * upgrades at its first write, which fails at once (SQLITE_BUSY) when another process wrote in between;
 * with IMMEDIATE a second process waits for the lock (busy_timeout) instead. Our transactions all write.
 */
function immediateTransactions(dialect: SqliteDialect, database: SQLite.Database): SqliteDialect {
  const createDriver = dialect.createDriver.bind(dialect);
  dialect.createDriver = () => {
    const driver = createDriver();
    driver.beginTransaction = async (connection) => {
      await connection.executeQuery(CompiledQuery.raw('begin immediate'));
    };
    // After some errors (SQLITE_FULL, an I/O error, out of memory) SQLite has rolled the transaction back
    // itself; a second ROLLBACK would fail ("no transaction is active") and that failure, not the error
    // that matters, would reach the caller.
    driver.rollbackTransaction = async (connection) => {
      if (database.inTransaction) await connection.executeQuery(CompiledQuery.raw('rollback'));
    };
    return driver;
  };
  // kysely's Migrator runs SQLite migrations outside a transaction and without a lock, so two processes
  // starting together on a new file could both apply one ("table already exists"). SQLite's DDL is
  // transactional: in a transaction, which takes the write lock at BEGIN, the second reads what the first
  // applied and does nothing.
  const createAdapter = dialect.createAdapter.bind(dialect);
  dialect.createAdapter = () => Object.defineProperty(createAdapter(), 'supportsTransactionalDdl', { get: () => true });
  return dialect;
}

export function openSqlite(dataDir: string): OpenedDatabase {
  ensureDataDir(dataDir);
  const file = sqliteFile(dataDir);
  const { database, db } = connectSqlite(file);
  // Should the thread fail or end, the service's connection checkpoints on its own again, as SQLite does
  // by default (inside the commit that crosses 1,000 pages).
  const checkpoints = startCheckpointThread(file, () => {
    if (database.open) database.pragma('wal_autocheckpoint = 1000');
  });
  const reads = new ReadsOffLoop(file);
  return {
    db,
    queueDb: db,
    dialect: 'sqlite',
    pool: null,
    queuePool: null,
    readOffLoop: reads.read,
    async close() {
      // The threads' connections go first, so that closing the last one folds the WAL into the database.
      await reads.stop();
      await checkpoints.stop();
      await db.destroy();
    },
  };
}

export function sqliteFile(dataDir: string): string {
  return join(dataDir, 'herald.db');
}

/** One connection to the embedded store's file, set up as every connection of the service is. */
export function connectSqlite(
  file: string,
  options: { fileMustExist?: boolean } = {},
): { database: SQLite.Database; db: Kysely<Database> } {
  // A new file is made readable by the service's user only (SQLite gives its -wal and -shm files the
  // database file's permissions); SQLite would create it world-readable under the usual umask.
  if (!options.fileMustExist) closeSync(openSync(file, 'a', 0o600));
  const database = new SQLite(file, options);
  database.pragma('journal_mode = WAL');
  // NORMAL in WAL mode survives a process crash; only an OS crash can lose the last commits.
  database.pragma('synchronous = NORMAL');
  database.pragma('busy_timeout = 5000');
  database.pragma(`wal_autocheckpoint = ${BACKSTOP_CHECKPOINT_PAGES}`);
  const db = new Kysely<Database>({
    dialect: immediateTransactions(new SqliteDialect({ database: withStatementCache(database) }), database),
  });
  return { database, db };
}

/**
 * SQLite copies committed pages from the WAL into the database file in checkpoints. Left to the commit
 * that crosses wal_autocheckpoint, a checkpoint runs on the event loop at ~10 µs per page: under steady
 * ingest 15 ms every ~50 ms, a quarter of the writer's time and most of the emit p99.
 * A thread with its own connection does that copying; the service's connection keeps a backstop at this
 * many pages (16 MB), where it checkpoints the few pages the thread has not reached yet itself, so the WAL
 * starts over even when commits never leave the thread a moment to catch up.
 */
const BACKSTOP_CHECKPOINT_PAGES = 4000;

/** Starts the checkpoint thread on `file`; `onFailed` runs if it ends before `stop()` (exported for tests). */
export function startCheckpointThread(file: string, onFailed: () => void): { stop(): Promise<void> } {
  const thread = new Worker(new URL('./checkpoint-thread.js', import.meta.url), {
    workerData: { file },
    // Only source maps: the thread is SQLite's, not the service's code, and stays out of CPU profiles.
    execArgv: threadExecArgv({ profile: false }),
  });
  // Never what keeps the process alive.
  thread.unref();
  let stopping = false;
  thread.on('error', () => {}); // followed by 'exit'
  const exited = new Promise<void>((resolve) =>
    thread.once('exit', () => {
      if (!stopping) onFailed();
      resolve();
    }),
  );
  return {
    async stop() {
      stopping = true;
      await endThread(thread, exited, 2_000);
    },
  };
}

export function openPostgres(url: string, poolSize = 10): OpenedDatabase {
  const pool = newPool(url, poolSize);
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  // The delivery worker's queue statements (claims, leases, outcomes) commit without waiting for the WAL
  // flush (docs/design/stores.md: what a server crash can then undo, and why nothing is lost). Set per
  // session, not as a startup option: that would replace PGOPTIONS, lose to an `options` in the URL, and
  // PgBouncer refuses it. pg-pool's own hook, not kysely's: a client whose SET fails is ended and
  // dropped, where kysely's would stay checked out for good. Emits and every API write keep synchronous
  // commit. Connections open when first used, so a process without a worker opens none here.
  // The same sessions plan with random_page_cost at most 1.1 (an operator's lower setting is kept): the
  // queue reads a few rows of hot tables, and at the default 4 (a spinning disk's random reads) a database
  // without table statistics (a new one, or autovacuum off) had a top-up read and sort every due task of
  // its endpoint instead of an index scan that stops at its limit (test/postgres/plans.test.ts).
  // They also plan with seq scans disabled (enable_seqscan = off: a seq scan is still taken where no index
  // can serve): the queue's statements are prepared (src/store/queue/postgres-statements.ts), and the
  // generic plan PostgreSQL keeps after a statement's fifth run is made once, from the tables as they are
  // then; made on small tables it read them whole, and went on reading them whole as they grew (an
  // outcome batch took 4 ms, then 14 ms within a minute of a drain).
  // And without JIT compilation (jit = off): a seq scan that no index can replace (the workers table's,
  // read every heartbeat) is costed above jit_above_cost once seq scans are disabled, and JIT would compile
  // it with LLVM on every run, tens of milliseconds of server CPU for a one-row read; no queue statement is
  // long enough for compiled code to pay back.
  const queuePool = newPool(url, poolSize, async (client) => {
    await client.query(`set synchronous_commit = off; set enable_seqscan = off; set jit = off;
          select set_config('random_page_cost', least(current_setting('random_page_cost')::float8, 1.1)::text, false)`);
  });
  const queueDb = new Kysely<Database>({ dialect: new PostgresDialect({ pool: queuePool }) });
  return {
    db,
    queueDb,
    dialect: 'postgres',
    pool,
    queuePool,
    // The server does the work; the event loop only waits for the answer.
    readOffLoop: async (query) => (await db.executeQuery(query)).rows,
    close: async () => {
      await Promise.all([db.destroy(), queueDb.destroy()]);
      // kysely ends a pool only if it ran a query on it; the queue's prepared statements may be all it ran.
      if (!queuePool.ended) await queuePool.end();
    },
  };
}

function newPool(url: string, max: number, onConnect?: (client: pg.ClientBase) => Promise<void>): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: 5000,
    ...(onConnect ? { onConnect } : {}),
  });
  // An idle client that loses its server must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  // Nor may a checked-out one: pg-pool removes its idle listener on checkout, and a client that is
  // between statements (inside a transaction, or holding the migration lock) when the server goes away
  // emits 'error' with no query to fail. Without a listener that crashes the process. The client is
  // unusable afterwards: its next query fails (the API answers 503) and the pool discards it on release.
  pool.on('connect', (client) => {
    client.on('error', () => {});
  });
  return pool;
}

export async function migrate(db: Kysely<any>, migrations: Record<string, Migration> = MIGRATIONS): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
