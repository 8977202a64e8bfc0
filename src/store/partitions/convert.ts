import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.js';
import { ATTEMPT_LOG_WITH_FIRST_REQUEST } from '../migrations/024_first_request_on_delivery.js';
import {
  defaultName,
  HOUR_MS,
  idBounds,
  legacyEnd,
  legacyName,
  PARTITIONED,
  type PartitionedTable,
} from '../../domain/partitions.js';
import { nameChildIndexes } from './index-names.js';

// Turning PostgreSQL's history tables into partitioned tables (`herald partition`; docs/design/partitions.md).
// Nothing is copied: each table, as it is, becomes its partitioned table's first partition (`<table>_legacy`),
// its indexes attached as they are; a default partition catches what no range covers, and the workers make
// the ranges ahead of now. Checking that the old rows fit the first range is one read of each table under a
// lock that lets writes go on; the swap itself holds each table's lock for a moment, and writes meanwhile
// wait and are kept.

/** Deliveries' pages are filled to a third (migration 021): each partition is made so. */
export const DELIVERIES_FILLFACTOR = 35;

/** The storage clause a table of `name` (a partition, or a plain table made again) is made with. */
export const storageOf = (name: PartitionedTable['table']) =>
  name === 'deliveries' ? sql` with (fillfactor = ${sql.lit(DELIVERIES_FILLFACTOR)})` : sql``;

/** Advisory lock key of the conversion (any constant unique to Herald). */
const CONVERT_LOCK = 0x48525056; // "HRPV"

/** True when the history tables are partitioned (PostgreSQL). */
export async function partitioned(db: Kysely<Database>): Promise<boolean> {
  const { rows } = await sql<{ kind: string }>`select relkind as kind from pg_class
    where relname = 'deliveries' and relnamespace = current_schema()::regnamespace`.execute(db);
  return rows[0]?.kind === 'p';
}

/** The check that a table's ids are below the first partition's end, which the attach then trusts. */
const boundName = (table: PartitionedTable) => `${table.table}_below_partitions`;

/**
 * Partitions the history tables; false when they are already. First each table's ids are checked against
 * the first partition's end (a constraint validated with writes going on: rows written meanwhile are
 * checked as they are written, and the end is an hour past the next, so they fit), then one transaction
 * swaps the tables, which the attach then does not read again.
 */
export async function partitionHistory(db: Kysely<Database>, now: number): Promise<boolean> {
  if (await partitioned(db)) return false;
  const end = legacyEnd(now + HOUR_MS);
  for (const table of PARTITIONED) {
    const { to } = idBounds(table, { from: null, to: end });
    const bound = sql.table(boundName(table));
    await sql`alter table ${sql.table(table.table)} drop constraint if exists ${bound}`.execute(db);
    await sql`alter table ${sql.table(table.table)} add constraint ${bound}
      check (${sql.ref(table.key)} < ${sql.lit(to)}) not valid`.execute(db);
    await sql`alter table ${sql.table(table.table)} validate constraint ${bound}`.execute(db);
  }
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${CONVERT_LOCK})`.execute(trx);
    if (await partitioned(trx)) return false;
    // The view names the tables it reads: it is made again over the partitioned ones.
    await sql`drop view attempt_log`.execute(trx);
    for (const table of PARTITIONED) await partitionTable(trx, table, end);
    await ATTEMPT_LOG_WITH_FIRST_REQUEST.execute(trx);
    return true;
  });
}

async function partitionTable(db: Kysely<Database>, table: PartitionedTable, end: number): Promise<void> {
  const name = table.table;
  const legacy = legacyName(name);
  const { to } = idBounds(table, { from: null, to: end });
  const { rows: indexes } = await sql<{ indexname: string; indexdef: string }>`
    select indexname, indexdef from pg_indexes where schemaname = current_schema() and tablename = ${name}`.execute(db);
  await sql`alter table ${sql.table(name)} rename to ${sql.table(legacy)}`.execute(db);
  // The index names go to the partitioned table; the old table's take its name as a suffix below.
  for (const { indexname } of indexes)
    await sql`alter index ${sql.table(indexname)} rename to ${sql.table(`${indexname}__old`)}`.execute(db);
  await sql`create table ${sql.table(name)} (like ${sql.table(legacy)} including defaults)
    partition by range (${sql.ref(table.key)})`.execute(db);
  for (const { indexname, indexdef } of indexes) {
    if (indexname === `${name}_pkey`)
      await sql`alter table ${sql.table(name)} add constraint ${sql.table(indexname)} primary key (${sql.ref(table.key)})`.execute(
        db,
      );
    else await sql.raw(indexdef).execute(db);
  }
  await sql`alter table ${sql.table(name)} attach partition ${sql.table(legacy)}
    for values from (minvalue) to (${sql.lit(to)})`.execute(db);
  await sql`alter table ${sql.table(legacy)} drop constraint ${sql.table(boundName(table))}`.execute(db);
  await nameChildIndexes(db, legacy, 'legacy');
  await sql`create table ${sql.table(defaultName(name))} partition of ${sql.table(name)} default${storageOf(name)}`.execute(
    db,
  );
  await nameChildIndexes(db, defaultName(name), 'default');
}
