import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { assertOpen, onCleanup } from './procs.js';

// A fresh PostgreSQL database per use, dropped at the end of the run (or on failure, through cleanup()).
export const PG_ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Runs `run` on a client of its own, connected to `url`, and ends the client after. */
export async function withClient<T>(url: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

const admin = <T>(run: (client: pg.Client) => Promise<T>) => withClient(PG_ADMIN_URL, run);

export async function postgresAvailable(): Promise<boolean> {
  return admin(async (client) => (await client.query('select 1'), true)).catch(() => false);
}

export interface BenchDatabase {
  url: string;
  drop(): Promise<void>;
}

export async function createDatabase(label: string): Promise<BenchDatabase> {
  assertOpen();
  const name = `herald_bench_${label}_${randomBytes(4).toString('hex')}`;
  let dropped = false;
  const drop = async () => {
    if (dropped) return;
    dropped = true;
    await admin((client) => client.query(`drop database if exists ${name} with (force)`));
  };
  // Cleanup waits for a creation in flight, then drops: no database outlives the run.
  const creating = admin((client) => client.query(`create database ${name}`));
  onCleanup(async () => {
    await creating.catch(() => {});
    await drop();
  });
  await creating;
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop };
}
