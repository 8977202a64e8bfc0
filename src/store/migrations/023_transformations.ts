import { type Kysely, sql } from 'kysely';
import { ATTEMPT_LOG } from './021_first_attempt_on_delivery.js';

/**
 * Every attempt with the request a transformation made (`request`, null otherwise): the view of migration
 * 021 with that column, null for the first attempts kept on delivery rows (a transformed attempt is
 * always a row of `attempts`).
 */
export const ATTEMPT_LOG_WITH_REQUEST = sql`create view attempt_log as
  select id, delivery_id, endpoint_id, attempt_number, trigger, status, response_status, response_body,
    request_headers, response_headers, error, duration_ms, created_at, request
  from attempts
  union all
  select first_attempt_id, id, endpoint_id, 1, 'scheduled', 'success', first_response_status,
    first_response_body, first_request_headers, first_response_headers, null, first_duration_ms, first_attempt_at,
    null
  from deliveries where first_attempt_at is not null`;

export async function up(db: Kysely<any>): Promise<void> {
  // An endpoint's transformation (src/domain/transformations.ts): its code (null: none), whether it runs,
  // and when it was last written, which names the code's version (a worker compiles each version once).
  await db.schema.alterTable('endpoints').addColumn('transformation_code', 'text').execute();
  await db.schema
    .alterTable('endpoints')
    .addColumn('transformation_enabled', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('endpoints').addColumn('transformation_updated_at', 'bigint').execute();
  // The request a transformation made instead of the plain one, as JSON {method, url, body}: what the
  // attempt's read shows was sent. Null: the plain request, which reads derive from the message.
  await db.schema.alterTable('attempts').addColumn('request', 'text').execute();
  await sql`drop view attempt_log`.execute(db);
  await ATTEMPT_LOG_WITH_REQUEST.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop view attempt_log`.execute(db);
  await ATTEMPT_LOG.execute(db);
  await db.schema.alterTable('attempts').dropColumn('request').execute();
  await db.schema.alterTable('endpoints').dropColumn('transformation_updated_at').execute();
  await db.schema.alterTable('endpoints').dropColumn('transformation_enabled').execute();
  await db.schema.alterTable('endpoints').dropColumn('transformation_code').execute();
}
