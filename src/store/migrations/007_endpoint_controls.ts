import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // An endpoint's own headers, sent with every request to it: a JSON object sealed with HERALD_SECRET_KEY
  // like signing secrets (an Authorization value is a credential); null when it has none.
  await db.schema.alterTable('endpoints').addColumn('headers_sealed', 'text').execute();
  // How its requests are signed, fixed at creation: `hmac` (a whsec_ secret) or `ed25519` (a whsk_ key,
  // kept in the secret columns); `public_key` is the current key's whpk_ form, shown on every read.
  await db.schema
    .alterTable('endpoints')
    .addColumn('signature_type', 'text', (c) => c.notNull().defaultTo('hmac'))
    .execute();
  await db.schema.alterTable('endpoints').addColumn('public_key', 'text').execute();
  // Most requests a second to the endpoint (null: no limit), counted across every worker process in
  // `endpoint_rates`: one row per limited endpoint, the calendar second it counts and what it granted.
  await db.schema.alterTable('endpoints').addColumn('rate_limit', 'integer').execute();
  // `fifo`: the endpoint's deliveries go one at a time in creation order (src/domain/fifo.ts).
  await db.schema
    .alterTable('endpoints')
    .addColumn('ordering', 'text', (c) => c.notNull().defaultTo('unordered'))
    .execute();
  await db.schema
    .createTable('endpoint_rates')
    .addColumn('endpoint_id', 'text', (c) => c.primaryKey())
    .addColumn('window_start', 'bigint', (c) => c.notNull())
    .addColumn('used', 'integer', (c) => c.notNull())
    .addColumn('granted', 'integer', (c) => c.notNull())
    .execute();
  // Work that runs in the background in bounded batches (an endpoint's recovery), resumable from its
  // cursor by any worker once its lease runs out (the worker running it died).
  await db.schema
    .createTable('background_tasks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('livemode', 'integer', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('params', 'text', (c) => c.notNull())
    .addColumn('cursor', 'text')
    .addColumn('enqueued', 'integer', (c) => c.notNull())
    .addColumn('failures', 'integer', (c) => c.notNull())
    .addColumn('lease_owner', 'text')
    .addColumn('lease_until', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('background_tasks_by_status').on('background_tasks').columns(['status', 'id']).execute();
}
