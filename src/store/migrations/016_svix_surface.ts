import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // What the Svix-compatible surface (src/api/svix/) carries besides the native fields. `metadata`: a
  // JSON object of strings, stored as given and read back. An endpoint's `uid` stands in for its id in
  // that surface's paths, unique within its application (NULLs are distinct in both databases).
  // `svix_headers`: 1 when the endpoint was created or updated through that surface, so its requests also
  // carry the svix-id / svix-timestamp / svix-signature names that receivers written against Svix verify.
  await db.schema
    .alterTable('applications')
    .addColumn('metadata', 'text', (c) => c.notNull().defaultTo('{}'))
    .execute();
  await db.schema.alterTable('endpoints').addColumn('uid', 'text').execute();
  await db.schema
    .alterTable('endpoints')
    .addColumn('metadata', 'text', (c) => c.notNull().defaultTo('{}'))
    .execute();
  await db.schema
    .alterTable('endpoints')
    .addColumn('svix_headers', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  // An event type's flags as Svix has them: `archived` hides it from lists (and portals) while messages
  // of it are still accepted; `deprecated` only marks it; `group_name` groups it in a portal.
  await db.schema
    .alterTable('event_types')
    .addColumn('archived', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('event_types')
    .addColumn('deprecated', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('event_types').addColumn('group_name', 'text').execute();
  // Channels route messages (an endpoint with channels gets only messages sharing one; src/domain/
  // envelope.ts), tags label messages for lists; both JSON arrays of names, null for none. A message's
  // `event_id` is the sender's id for it, unique in its environment (a repeat is refused).
  await db.schema.alterTable('endpoints').addColumn('channels', 'text').execute();
  // An endpoint's content filter (a MongoDB-style query as JSON, src/domain/content-filter.ts); null: none.
  await db.schema.alterTable('endpoints').addColumn('filter', 'text').execute();
  await db.schema.alterTable('messages').addColumn('channels', 'text').execute();
  await db.schema.alterTable('messages').addColumn('tags', 'text').execute();
  await db.schema.alterTable('messages').addColumn('event_id', 'text').execute();
  await db.schema
    .createIndex('messages_event_id')
    .unique()
    .on('messages')
    .columns(['org_id', 'livemode', 'event_id'])
    .execute();
  // A payload asked to go sooner than the retention period (Svix's payloadRetentionPeriod): when.
  await db.schema.alterTable('payloads').addColumn('expires_at', 'bigint').execute();
  await db.schema.createIndex('payloads_by_expiry').on('payloads').column('expires_at').execute();
  await db.schema.createIndex('endpoints_uid').unique().on('endpoints').columns(['app_id', 'uid']).execute();
  // Portal links made on request (Svix's app-portal-access): each opens its application's portal until
  // it expires, beside the application's own portal token; only the token's hash is kept.
  await db.schema
    .createTable('portal_links')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('app_id', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('portal_links_by_app').on('portal_links').column('app_id').execute();
  await db.schema.createIndex('portal_links_by_expiry').on('portal_links').column('expires_at').execute();
  // Answers kept by idempotency key for the Svix surface's POSTs, so a repeat answers as the first did.
  // `status` 0: the first is still being answered (until its short expiry, then it may be taken over).
  await db.schema
    .createTable('request_replays')
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('livemode', 'integer', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('request', 'text', (c) => c.notNull())
    .addColumn('status', 'integer', (c) => c.notNull())
    .addColumn('body', 'text')
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('request_replays_pk', ['org_id', 'livemode', 'key'])
    .execute();
  await db.schema.createIndex('request_replays_by_expiry').on('request_replays').column('expires_at').execute();
}
