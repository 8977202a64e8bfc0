import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.js';
import type { StoreContext } from '../common.js';
import { defaultRows, dropExpired, holdRevivalsShared, makeAhead } from './postgres.js';
import { partitioned, partitionHistory } from './convert.js';

// The history tables' partitions (PostgreSQL, once `herald partition` made them; docs/design/partitions.md):
// every worker keeps them with the retention purge, one at a time across processes.

/** The row purge's side of the revivals lock (PostgreSQL): see postgres.ts, REVIVALS_LOCK. */
export { waitForRevivals } from './postgres.js';

export interface PartitionSettings {
  intervalMs: number;
  ahead: number;
  retentionMs: number;
}

export interface PartitionWork {
  made: string[];
  dropped: string[];
  /** Rows the default partitions hold (none while partitions are made ahead). */
  defaultRows: number;
}

/** Advisory lock key of partition keeping (any constant unique to Herald). */
const PARTITIONS_LOCK = 0x48525054; // "HRPT"

/**
 * Makes the partitions ahead of now and drops those past the retention period. Null on the embedded
 * store, on tables not partitioned, and when another process is doing it.
 */
export async function maintainPartitions(
  ctx: StoreContext,
  settings: PartitionSettings,
): Promise<PartitionWork | null> {
  if (ctx.dialect !== 'postgres' || !(await partitioned(ctx.db))) return null;
  return ctx.db.connection().execute(async (db) => {
    const lock = await sql<{ got: boolean }>`select pg_try_advisory_lock(${PARTITIONS_LOCK}) as got`.execute(db);
    if (!lock.rows[0]?.got) return null;
    try {
      const now = ctx.now();
      const made = await makeAhead(db, now, settings.intervalMs, settings.ahead);
      const dropped = await dropExpired(db, now, settings.retentionMs);
      return { made, dropped, defaultRows: await defaultRows(db) };
    } finally {
      await sql`select pg_advisory_unlock(${PARTITIONS_LOCK})`.execute(db);
    }
  });
}

/**
 * Called first in a transaction that may give history past the retention period new work: a retry, a
 * replay, a recovery's batch. On PostgreSQL it holds the revivals lock shared (postgres.ts), so a
 * partition's drop and the revival take turns; the embedded store's row purge needs nothing.
 */
export async function beforeRevival(trx: Kysely<Database>, dialect: StoreContext['dialect']): Promise<void> {
  if (dialect === 'postgres') await holdRevivalsShared(trx);
}

/**
 * Partitions the history tables (`herald partition`), then makes the partitions ahead of now. False when
 * they were partitioned already; throws on the embedded store, which has no partitions.
 */
export async function partitionTables(ctx: StoreContext, settings: PartitionSettings): Promise<boolean> {
  if (ctx.dialect !== 'postgres')
    throw new Error('partitions are for PostgreSQL: the embedded store keeps plain tables');
  const made = await partitionHistory(ctx.db, ctx.now());
  await maintainPartitions(ctx, settings);
  return made;
}
