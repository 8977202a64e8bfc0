import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.js';
import {
  defaultName,
  expired,
  idBounds,
  PARTITIONED,
  type PartitionedTable,
  partitionName,
  rangesToMake,
  type TimeRange,
} from '../../domain/partitions.js';
import { book } from '../queue/index.js';
import { nameChildIndexes } from './index-names.js';
import { partitioned, storageOf } from './convert.js';
import { type Partition, partitionsOf } from './catalog.js';

// The partitions' SQL (PostgreSQL only; the embedded store keeps plain tables): reading a table's
// partitions, making the ranges ahead, and dropping those past the retention period.

/**
 * Makes the partition of `table` for `range`. Rows the default partition caught in that range (written
 * while no partition covered it) move into the new one, in the same transaction.
 */
export async function makePartition(db: Kysely<Database>, table: PartitionedTable, range: TimeRange): Promise<string> {
  const name = partitionName(table.table, range.from!);
  const { from, to } = idBounds(table, range);
  const key = sql.ref(table.key);
  await db.transaction().execute(async (trx) => {
    // A moment's lock on the parent: waiting longer would hold up every emit and claim queued behind it.
    await sql`set local lock_timeout = '2s'`.execute(trx);
    const caught = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(defaultName(table.table))}
      where ${key} >= ${from} and ${key} < ${to}`.execute(trx);
    if ((caught.rows[0]?.n ?? 0) === 0) {
      await sql`create table ${sql.table(name)} partition of ${sql.table(table.table)}
        for values from (${sql.lit(from)}) to (${sql.lit(to)})${storageOf(table.table)}`.execute(trx);
    } else {
      await sql`create table ${sql.table(name)} (like ${sql.table(table.table)} including defaults)${storageOf(table.table)}`.execute(
        trx,
      );
      await sql`with moved as (delete from ${sql.table(defaultName(table.table))}
          where ${key} >= ${from} and ${key} < ${to} returning *)
        insert into ${sql.table(name)} select * from moved`.execute(trx);
      await sql`alter table ${sql.table(table.table)} attach partition ${sql.table(name)}
        for values from (${sql.lit(from)}) to (${sql.lit(to)})`.execute(trx);
    }
    await nameChildIndexes(trx, name, name.slice(table.table.length + 1));
  });
  return name;
}

/** Makes the ranges of every partitioned table up to `ahead` intervals after now; answers the partitions made. */
export async function makeAhead(
  db: Kysely<Database>,
  now: number,
  intervalMs: number,
  ahead: number,
): Promise<string[]> {
  const made: string[] = [];
  for (const table of PARTITIONED) {
    const ranged = (await partitionsOf(db, table.table)).filter((p) => p.range !== null);
    const lastEnd = Math.max(...ranged.map((p) => p.range!.to));
    for (const range of rangesToMake(lastEnd, now, intervalMs, ahead)) made.push(await makePartition(db, table, range));
  }
  return made;
}

/**
 * Advisory lock key of revivals: what may give a delivery past the retention period another attempt, or
 * a message past it a new delivery (a retry, a replay, a recovery), holds it shared for its transaction
 * (holdRevivalsShared); a partition's detach (dropExpired) and a batch of the row purge (waitForRevivals)
 * hold it exclusively. So a revival either commits before the drop's or the purge's last look, which then
 * sees it, or starts after them and finds the rows gone.
 */
export const REVIVALS_LOCK = 0x48525256; // "HRRV"

/** Holds the revivals lock shared until the transaction ends (first, before the revival reads anything). */
export async function holdRevivalsShared(trx: Kysely<Database>): Promise<void> {
  await sql`select pg_advisory_xact_lock_shared(${REVIVALS_LOCK})`.execute(trx);
}

/** Holds the revivals lock exclusively until the transaction ends, once the revivals under way are done. */
export async function waitForRevivals(trx: Kysely<Database>): Promise<void> {
  await sql`select pg_advisory_xact_lock(${REVIVALS_LOCK})`.execute(trx);
}

/** Tries for the revivals lock before a detach, this many times this far apart, then leaves it to the next run. */
const REVIVALS_TRIES = 20;
const REVIVALS_RETRY_MS = 100;

/**
 * Takes the revivals lock exclusively if it comes free within REVIVALS_TRIES tries: a drop never waits in
 * the lock's queue, so no retry waits behind a drop that is itself waiting.
 */
async function tryRevivalsLock(trx: Kysely<Database>): Promise<boolean> {
  for (let tries = 1; ; tries++) {
    const lock = await sql<{ got: boolean }>`select pg_try_advisory_xact_lock(${REVIVALS_LOCK}) as got`.execute(trx);
    if (lock.rows[0]?.got) return true;
    if (tries >= REVIVALS_TRIES) return false;
    await new Promise((resolve) => setTimeout(resolve, REVIVALS_RETRY_MS));
  }
}

/**
 * Whether a partition past the retention period may go now. Deliveries wait while one of theirs still has
 * an attempt to make; messages and payloads while a delivery (in any partition: a replay's are newer than
 * its message) still names one of theirs. Attempt history goes with its range.
 */
async function mayDrop(db: Kysely<Database>, table: PartitionedTable, partition: Partition): Promise<boolean> {
  switch (table.table) {
    case 'attempts':
      return true;
    case 'deliveries':
      // No index answers this: the partition is read whole, by one process. A parallel scan would take
      // every core for it, and the emits running beside the hourly retention would wait for them.
      return db.transaction().execute(async (trx) => {
        await sql`set local max_parallel_workers_per_gather = 0`.execute(trx);
        const { rows } = await sql`select 1 from ${sql.table(partition.name)} as deliveries
          where status = 'pending' or ${book.hasQueued} limit 1`.execute(trx);
        return rows.length === 0;
      });
    case 'messages':
    case 'payloads':
      return !(await namedByDeliveries(db, table, partition));
  }
}

/**
 * Whether a revival reached the partition since mayDrop looked, read under the revivals lock through
 * indexes: a revived delivery has an attempt at its queue's head (book.hasHead, what the partition's due
 * index holds), and a replay's delivery names its message (`deliveries_by_message`).
 */
async function revivedSince(trx: Kysely<Database>, table: PartitionedTable, partition: Partition): Promise<boolean> {
  switch (table.table) {
    case 'attempts':
      return false;
    case 'deliveries': {
      const { rows } = await sql`select 1 from ${sql.table(partition.name)} as deliveries
        where ${book.hasHead} limit 1`.execute(trx);
      return rows.length > 0;
    }
    case 'messages':
    case 'payloads':
      return namedByDeliveries(trx, table, partition);
  }
}

/** Whether a delivery, in any partition, names a message of the partition's range. */
async function namedByDeliveries(
  db: Kysely<Database>,
  table: PartitionedTable,
  partition: Partition,
): Promise<boolean> {
  const { from, to } = idBounds(table, partition.range!);
  const inRange = from === null ? sql`message_id < ${to}` : sql`message_id >= ${from} and message_id < ${to}`;
  const { rows } = await sql`select 1 from deliveries where ${inRange} limit 1`.execute(db);
  return rows.length > 0;
}

/**
 * Drops the partitions whose whole range is past the retention period and may go (mayDrop), deliveries
 * before the messages they name. The first look reads what no index answers, outside any lock. Then, in
 * one transaction, the revivals lock (tryRevivalsLock; a partition it does not get waits for the next run),
 * a second look at what a revival may have done meanwhile (revivedSince, through indexes), and the detach,
 * under a lock the parent's readers and writers wait on only for a moment (not CONCURRENTLY: PostgreSQL
 * refuses it on a table with a default partition). Then the partition is dropped on its own. Answers the
 * partitions dropped.
 */
export async function dropExpired(db: Kysely<Database>, now: number, retentionMs: number): Promise<string[]> {
  const dropped: string[] = [];
  for (const table of ORDER_OF_DROPS) {
    for (const partition of await partitionsOf(db, table.table)) {
      if (partition.range === null || !expired(partition.range, now, retentionMs)) continue;
      if (!(await mayDrop(db, table, partition))) continue;
      const detached = await db.transaction().execute(async (trx) => {
        await sql`set local lock_timeout = '2s'`.execute(trx);
        // Attempts are never revived: a retry's attempt is a new row, in a new partition.
        if (table.table !== 'attempts') {
          if (!(await tryRevivalsLock(trx)) || (await revivedSince(trx, table, partition))) return false;
        }
        await sql`alter table ${sql.table(table.table)} detach partition ${sql.table(partition.name)}`.execute(trx);
        return true;
      });
      if (!detached) continue;
      await sql`drop table ${sql.table(partition.name)}`.execute(db);
      dropped.push(partition.name);
    }
  }
  return dropped;
}

/** Attempts and deliveries go before the messages and payloads they name. */
const ORDER_OF_DROPS = ['attempts', 'deliveries', 'payloads', 'messages'].map(
  (name) => PARTITIONED.find((table) => table.table === name)!,
);

/**
 * Rows the default partitions hold: none while partitions are made ahead (`herald_default_partition_rows`),
 * and none while the tables are not partitioned.
 */
export async function defaultRows(db: Kysely<Database>): Promise<number> {
  if (!(await partitioned(db))) return 0;
  let total = 0;
  for (const table of PARTITIONED) {
    const { rows } = await sql<{
      n: number;
    }>`select count(*)::int as n from ${sql.table(defaultName(table.table))}`.execute(db);
    total += rows[0]?.n ?? 0;
  }
  return total;
}
