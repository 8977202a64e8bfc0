import { type Kysely, sql } from 'kysely';
import { ATTEMPT_LOG_WITH_REQUEST } from './023_transformations.js';

/**
 * A transformed first attempt that succeeded is kept on its delivery row like any other (migration 021):
 * `first_request` holds the request its transformation made, as `attempts.request` does for the rows of
 * `attempts` (migration 023). A delivery to an endpoint with a transformation then writes no attempt row in
 * the common case either.
 */
export const ATTEMPT_LOG_WITH_FIRST_REQUEST = sql`create view attempt_log as
  select id, delivery_id, endpoint_id, attempt_number, trigger, status, response_status, response_body,
    request_headers, response_headers, error, duration_ms, created_at, request
  from attempts
  union all
  select first_attempt_id, id, endpoint_id, 1, 'scheduled', 'success', first_response_status,
    first_response_body, first_request_headers, first_response_headers, null, first_duration_ms, first_attempt_at,
    first_request
  from deliveries where first_attempt_at is not null`;

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('deliveries').addColumn('first_request', 'text').execute();
  await sql`drop view attempt_log`.execute(db);
  await ATTEMPT_LOG_WITH_FIRST_REQUEST.execute(db);
}

/** Deliveries whose transformed first attempts are carried back at a time. */
const BATCH = 500;

/** Back to migration 023: a transformed first attempt kept on its delivery goes back to a row of `attempts`. */
export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop view attempt_log`.execute(db);
  for (;;) {
    const rows = await db
      .selectFrom('deliveries')
      .selectAll()
      .where('first_request', 'is not', null)
      .orderBy('id')
      .limit(BATCH)
      .execute();
    if (rows.length === 0) break;
    await db
      .insertInto('attempts')
      .values(
        rows.map((row) => ({
          id: row.first_attempt_id,
          delivery_id: row.id,
          endpoint_id: row.endpoint_id,
          attempt_number: 1,
          trigger: 'scheduled',
          status: 'success',
          response_status: row.first_response_status,
          response_body: row.first_response_body,
          request_headers: row.first_request_headers,
          response_headers: row.first_response_headers,
          error: null,
          duration_ms: row.first_duration_ms,
          created_at: row.first_attempt_at,
          request: row.first_request,
        })),
      )
      .execute();
    // The delivery keeps first_attempt_id, which names its first attempt wherever it is recorded.
    await db
      .updateTable('deliveries')
      .set({
        first_attempt_at: null,
        first_duration_ms: null,
        first_response_status: null,
        first_response_body: null,
        first_request_headers: null,
        first_response_headers: null,
        first_request: null,
      })
      .where(
        'id',
        'in',
        rows.map((row) => row.id),
      )
      .execute();
  }
  await db.schema.alterTable('deliveries').dropColumn('first_request').execute();
  await ATTEMPT_LOG_WITH_REQUEST.execute(db);
}
