import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import { startService, type Service } from '../../src/service.js';
import { randomToken } from '../../src/domain/ids.js';
import { migrate, openPostgres } from '../../src/store/db.js';
import { processAlive } from './child.js';

// Tests run against the real service on a random port, on the store the test runner (scripts/test.mjs)
// names in SUITE_STORE from the file's folder: `sqlite` (a fresh data dir) or `postgres` (a fresh database on
// the local server, dropped after). A file run by hand outside the runner takes its folder's store too.

function storeOfThisRun(): 'sqlite' | 'postgres' {
  const named = process.env.SUITE_STORE;
  if (named === 'sqlite' || named === 'postgres') return named;
  return /[/\\]test[/\\]postgres[/\\]/.test(process.argv[1] ?? '') ? 'postgres' : 'sqlite';
}

export const TEST_STORE = storeOfThisRun();
/** The HERALD_SECRET_KEY test services seal with. */
export const TEST_SECRET_KEY = 'test-secret-key-that-is-long-enough-0123456789';
export const PG_ADMIN_URL = process.env.SUITE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  env: Record<string, string>;
  drop(): Promise<void>;
}

/**
 * A name for a PostgreSQL object a test makes (a database, a tablespace). The creating process's pid is in
 * it, so a sweep can tell a leftover of a killed run from one another test run is using right now (see
 * sweepStaleDatabases).
 */
export function testObjectName(): string {
  return `herald_test_${process.pid}_${randomToken(8).toLowerCase()}`;
}

/** How long adminQuery waits out a server whose checkpoints fail (below). */
const CHECKPOINT_PATIENCE_MS = 60_000;

/**
 * Runs one statement as PostgreSQL's admin (PG_ADMIN_URL), on a connection of its own. Creating and
 * dropping a database make the server checkpoint, and a checkpoint fails for everyone while the full-disk
 * test's tablespace is full (test/postgres/store/full-disk.test.ts); that test frees it within its run,
 * so such a statement is tried again until then.
 */
export async function adminQuery(statement: string): Promise<void> {
  const until = Date.now() + CHECKPOINT_PATIENCE_MS;
  for (;;) {
    const client = new pg.Client({ connectionString: PG_ADMIN_URL });
    try {
      await client.connect();
      await client.query(statement);
      return;
    } catch (error) {
      if (!/checkpoint request failed/.test(String((error as Error)?.message)) || Date.now() > until) throw error;
    } finally {
      await client.end().catch(() => {});
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/**
 * A fresh store: a temp data dir, plus a new PostgreSQL database when testing on PostgreSQL (in `tablespace`
 * when one is named). Empty, unless `migrated` and the test runner made a migrated template database
 * (SUITE_PG_TEMPLATE, createTemplateDatabase): then a copy of it, so the service's migration finds nothing
 * to do. A test of migrating, or of processes migrating at once, takes an empty one.
 */
export async function createTestDatabase(
  options: { tablespace?: string; migrated?: boolean } = {},
): Promise<TestDatabase> {
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-test-'));
  if (TEST_STORE === 'sqlite') {
    return { env: { HERALD_DATA_DIR: dataDir }, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const name = testObjectName();
  const template = options.migrated ? process.env.SUITE_PG_TEMPLATE : undefined;
  await adminQuery(
    `create database ${name}${template ? ` template ${template}` : ''}${options.tablespace ? ` tablespace ${options.tablespace}` : ''}`,
  );
  const url = databaseUrl(name);
  return {
    env: { HERALD_DATA_DIR: dataDir, HERALD_DATABASE_URL: url },
    drop: async () => {
      rmSync(dataDir, { recursive: true, force: true });
      await adminQuery(`drop database if exists ${name} with (force)`);
    },
  };
}

const databaseUrl = (name: string) => {
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
};

/**
 * Makes database `name` and migrates it to the latest schema, for the test runner: the databases of a run's
 * tests are copies of it (createTestDatabase's `migrated`), which costs PostgreSQL a file copy where
 * migrating each anew cost it about 85 ms of CPU. Its connections are closed on return, as a template
 * must have none. `name` carries the runner's pid (testObjectName's form), so a sweep removes it once the
 * runner is gone.
 */
export async function createTemplateDatabase(name: string): Promise<void> {
  await adminQuery(`create database ${name}`);
  const opened = openPostgres(databaseUrl(name), 1);
  try {
    await migrate(opened.db);
  } finally {
    await opened.close();
  }
}

/**
 * Drops test databases left behind by test processes that no longer exist (killed before their t.after
 * ran). Databases of live processes, other people's concurrent runs included, are left alone.
 */
export async function sweepStaleDatabases(adminUrl = PG_ADMIN_URL): Promise<string[]> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const stale = async (sql: string) =>
      (await client.query<{ name: string }>(sql)).rows
        .map((r) => r.name)
        .filter((name) => {
          const pid = /^herald_test_(\d+)_[a-z0-9]+$/.exec(name)?.[1];
          return pid !== undefined && !processAlive(Number(pid));
        });
    const databases = await stale(`select datname as name from pg_database where datname like 'herald_test_%'`);
    for (const name of databases) await client.query(`drop database if exists "${name}" with (force)`);
    // The full-disk test's tablespaces (test/postgres/full-disk.test.ts), once their database is gone.
    const tablespaces = await stale(`select spcname as name from pg_tablespace where spcname like 'herald_test_%'`);
    const dropped: string[] = [];
    for (const name of tablespaces)
      await client.query(`drop tablespace if exists "${name}"`).then(
        () => dropped.push(name),
        () => {},
      );
    return [...databases, ...dropped];
  } finally {
    await client.end().catch(() => {});
  }
}

export interface TestService extends Service {
  url: string;
  database: TestDatabase;
  /** Stops the service and removes its store. */
  stop(): Promise<void>;
}

/**
 * Starts the whole service in this process on a random port. `env` overrides settings, for example a
 * compressed retry schedule: { HERALD_RETRY_SCHEDULE: '0s,200ms,400ms' }. With `logLines`, the service
 * logs at info into it (one JSON line each) instead of not at all.
 */
export async function startTestService(
  env: Record<string, string> = {},
  database?: TestDatabase,
  logLines?: string[],
): Promise<TestService> {
  const db = database ?? (await createTestDatabase({ migrated: true }));
  let service: Service;
  try {
    const config = loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      HERALD_SECRET_KEY: TEST_SECRET_KEY,
      HERALD_LOG_LEVEL: 'silent',
      HERALD_DEFAULT_PLAN: 'unlimited',
      // Tests send bad keys by the dozen from one address; test/api/auth-failures.test.ts sets its own limit.
      HERALD_AUTH_FAILURE_LIMIT: '1000000',
      // The circuit breaker stays out of tests that fail attempts on purpose; its own tests set their settings.
      HERALD_CIRCUIT_MIN_ATTEMPTS: '1000000',
      ...db.env,
      ...env,
    });
    const logger = logLines
      ? pino({ level: 'info' }, { write: (line: string) => void logLines.push(line) })
      : pino({ level: config.logLevel });
    service = await startService(config, logger);
  } catch (error) {
    // A service that does not start (a test of a refused setting) leaves no store behind, and the test
    // sees why it did not start.
    if (!database) await db.drop().catch(() => {});
    throw error;
  }
  return {
    ...service,
    url: service.url ?? '',
    database: db,
    stop: async () => {
      try {
        await service.close();
      } finally {
        if (!database) await db.drop();
      }
    },
  };
}
