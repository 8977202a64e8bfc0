import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import { startService, type Service } from '../../src/service.js';
import { randomToken } from '../../src/domain/ids.js';

// Tests run against the real service on a random port, on the store named by HERALD_TEST_STORE:
// `sqlite` (default; a fresh data dir) or `postgres` (a fresh database on the local server, dropped after).

export const TEST_STORE = process.env.HERALD_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';
export const PG_ADMIN_URL = process.env.HERALD_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  env: Record<string, string>;
  drop(): Promise<void>;
}

/** A fresh, empty store: a temp data dir, plus a new PostgreSQL database when testing on PostgreSQL. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-test-'));
  if (TEST_STORE === 'sqlite') {
    return { env: { HERALD_DATA_DIR: dataDir }, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const name = `herald_test_${randomToken(8).toLowerCase()}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    env: { HERALD_DATA_DIR: dataDir, HERALD_DATABASE_URL: url.toString() },
    drop: async () => {
      const client = new pg.Client({ connectionString: PG_ADMIN_URL });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface TestService extends Service {
  url: string;
  database: TestDatabase;
  /** Stops the service and removes its store. */
  stop(): Promise<void>;
}

/**
 * Starts the whole service in this process on a random port. `env` overrides settings, for example a
 * compressed retry schedule: { HERALD_RETRY_SCHEDULE: '0s,200ms,400ms' }.
 */
export async function startTestService(env: Record<string, string> = {}, database?: TestDatabase): Promise<TestService> {
  const db = database ?? (await createTestDatabase());
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    HERALD_SECRET_KEY: 'test-secret-key-that-is-long-enough-0123456789',
    HERALD_LOG_LEVEL: 'silent',
    HERALD_DEFAULT_PLAN: 'unlimited',
    ...db.env,
    ...env,
  });
  const service = await startService(config, pino({ level: config.logLevel }));
  return {
    ...service,
    url: service.url ?? '',
    database: db,
    stop: async () => {
      await service.close();
      if (!database) await db.drop();
    },
  };
}
