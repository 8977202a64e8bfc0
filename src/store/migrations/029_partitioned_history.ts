import { type Kysely, PostgresAdapter, sql } from 'kysely';
import { ATTEMPT_LOG_WITH_FIRST_REQUEST } from './024_first_request_on_delivery.js';
import {
  defaultName,
  idBounds,
  legacyEnd,
  legacyName,
  PARTITIONED,
  type PartitionedTable,
} from '../../domain/partitions.js';
import { nameChildIndexes } from '../partitions/index-names.js';

/**
 * PostgreSQL: messages, payloads, deliveries and attempts become tables partitioned by ranges of their
 * time-ordered ids (docs/design/partitions.md), so that retention drops a day's partitions instead of
 * deleting its rows. Nothing is copied: each table, as it is, becomes its partitioned table's first
 * partition (`<table>_legacy`, every id before the next hour), its indexes attached as they are; a default
 * partition catches what no range covers, and the worker makes the ranges ahead of now
 * (src/store/partitions/). Checking that the old rows fit the first range is one read of each table under a
 * lock that lets writes go on; the swap itself holds each table's lock for a moment.
 *
 * A partitioned table's unique indexes must hold its partition key, so a message's event id (unique in its
 * environment) moves to a table of its own on both stores: `message_event_ids`.
 */

/** Deliveries' pages are filled to a third (migration 021): each partition is made so. */
export const DELIVERIES_FILLFACTOR = 35;

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('message_event_ids')
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('livemode', 'integer', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('message_event_ids_pkey', ['org_id', 'livemode', 'event_id'])
    .execute();
  // Retention removes an event id with its message.
  await db.schema.createIndex('message_event_ids_by_message').on('message_event_ids').column('message_id').execute();
  await sql`insert into message_event_ids (org_id, livemode, event_id, message_id)
    select org_id, livemode, event_id, id from messages where event_id is not null`.execute(db);
  await db.schema.dropIndex('messages_event_id').execute();
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;

  const end = legacyEnd(Date.now());
  // The view names the tables it reads: it is made again over the partitioned ones.
  await sql`drop view attempt_log`.execute(db);
  for (const table of PARTITIONED) await partitionTable(db, table, end);
  await ATTEMPT_LOG_WITH_FIRST_REQUEST.execute(db);
}

async function partitionTable(db: Kysely<any>, table: PartitionedTable, end: number): Promise<void> {
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
  // A check the rows are read against with writes going on, which the attach then trusts instead of
  // reading the table again under its stronger lock.
  const bound = `${legacy}_bound`;
  await sql`alter table ${sql.table(legacy)} add constraint ${sql.table(bound)}
    check (${sql.ref(table.key)} < ${sql.lit(to)}) not valid`.execute(db);
  await sql`alter table ${sql.table(legacy)} validate constraint ${sql.table(bound)}`.execute(db);
  await sql`alter table ${sql.table(name)} attach partition ${sql.table(legacy)}
    for values from (minvalue) to (${sql.lit(to)})`.execute(db);
  await sql`alter table ${sql.table(legacy)} drop constraint ${sql.table(bound)}`.execute(db);
  await nameChildIndexes(db, legacy, 'legacy');
  const storage = name === 'deliveries' ? sql` with (fillfactor = ${sql.lit(DELIVERIES_FILLFACTOR)})` : sql``;
  await sql`create table ${sql.table(defaultName(name))} partition of ${sql.table(name)} default${storage}`.execute(db);
  await nameChildIndexes(db, defaultName(name), 'default');
}

/** Back to plain tables (a rollback to the release before): the partitions' rows are copied into one table each. */
export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`drop view attempt_log`.execute(db);
    for (const table of PARTITIONED) await flatten(db, table);
    await ATTEMPT_LOG_WITH_FIRST_REQUEST.execute(db);
  }
  await db.schema
    .createIndex('messages_event_id')
    .unique()
    .on('messages')
    .columns(['org_id', 'livemode', 'event_id'])
    .execute();
  await db.schema.dropTable('message_event_ids').execute();
}

async function flatten(db: Kysely<any>, table: PartitionedTable): Promise<void> {
  const name = table.table;
  const flat = `${name}__flat`;
  const { rows: indexes } = await sql<{ indexname: string; indexdef: string }>`
    select indexname, indexdef from pg_indexes where schemaname = current_schema() and tablename = ${name}`.execute(db);
  const storage = name === 'deliveries' ? sql` with (fillfactor = ${sql.lit(DELIVERIES_FILLFACTOR)})` : sql``;
  await sql`create table ${sql.table(flat)} (like ${sql.table(name)} including defaults)${storage}`.execute(db);
  await sql`insert into ${sql.table(flat)} select * from ${sql.table(name)}`.execute(db);
  await sql`drop table ${sql.table(name)}`.execute(db);
  await sql`alter table ${sql.table(flat)} rename to ${sql.table(name)}`.execute(db);
  for (const { indexname, indexdef } of indexes) {
    if (indexname === `${name}_pkey`)
      await sql`alter table ${sql.table(name)} add constraint ${sql.table(indexname)} primary key (${sql.ref(table.key)})`.execute(
        db,
      );
    else await sql.raw(indexdef.replace(' ON ONLY ', ' ON ')).execute(db);
  }
}
