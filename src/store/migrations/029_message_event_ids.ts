import { type Kysely, PostgresAdapter, sql } from 'kysely';
import { ATTEMPT_LOG_WITH_FIRST_REQUEST } from './024_first_request_on_delivery.js';
import { PARTITIONED, type PartitionedTable } from '../../domain/partitions.js';
import { partitioned, storageOf } from '../partitions/convert.js';

/**
 * A message's event id (unique in its environment) moves to a table of its own, on both stores:
 * `message_event_ids`. Partitioned `messages` (`herald partition`, docs/design/partitions.md) can hold no
 * unique index without its partition key.
 */
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
}

/**
 * Back to the event ids' unique index on `messages` (a rollback to the release before). Partitioned
 * history tables become plain ones first: their rows are copied, a copy of the whole history.
 */
export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter && (await partitioned(db))) {
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
  await sql`create table ${sql.table(flat)} (like ${sql.table(name)} including defaults)${storageOf(name)}`.execute(db);
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
