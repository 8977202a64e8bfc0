import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // One row per change of configuration (src/store/audit-log.ts), written in the change's transaction.
  // Ids are time-ordered: the log pages newest first by id, and retention deletes by id range.
  await db.schema
    .createTable('audit_log')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('livemode', 'integer', (c) => c.notNull())
    .addColumn('actor_type', 'text', (c) => c.notNull())
    .addColumn('actor_id', 'text')
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('resource_type', 'text', (c) => c.notNull())
    .addColumn('resource_id', 'text', (c) => c.notNull())
    .addColumn('changes', 'text', (c) => c.notNull())
    .addColumn('request_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  // The environment's log, newest first (GET /api/v1/audit-log), and one resource's history.
  await db.schema.createIndex('audit_log_by_scope').on('audit_log').columns(['org_id', 'livemode', 'id']).execute();
  await db.schema
    .createIndex('audit_log_by_resource')
    .on('audit_log')
    .columns(['org_id', 'livemode', 'resource_id', 'id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('audit_log').execute();
}
