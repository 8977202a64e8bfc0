import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // Operational webhooks: each organization's environment has at most one hidden application, made on its
  // first operational endpoint, whose endpoints receive Herald's own events through the normal queue.
  // `operational` = 1 marks that application and its endpoints; the API's application and endpoint
  // routes never show them.
  await db.schema
    .alterTable('applications')
    .addColumn('operational', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('endpoints')
    .addColumn('operational', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  // One hidden application per environment: two first creates at once insert one row.
  await db.schema
    .createIndex('applications_operational')
    .on('applications')
    .columns(['org_id', 'livemode'])
    .unique()
    .where(sql.ref('operational'), '=', 1)
    .execute();
  // An event's recipients are read inside the transaction that raises it, by this small index.
  await db.schema
    .createIndex('endpoints_operational')
    .on('endpoints')
    .columns(['org_id', 'livemode', 'id'])
    .where(sql.ref('operational'), '=', 1)
    .execute();
}
