import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * A delivery's first attempt, when it succeeded and its worker still held it, is recorded on the delivery
 * row instead of a row of `attempts` (src/domain/outcome-plan.ts, placeAttempts): the common delivery then
 * writes its row twice (claim, outcome) and nothing else. The other attempts keep their rows.
 */
const COLUMNS = [
  ['first_attempt_id', 'text'],
  ['first_attempt_at', 'bigint'],
  ['first_duration_ms', 'integer'],
  ['first_response_status', 'integer'],
  ['first_response_body', 'text'],
  ['first_request_headers', 'text'],
  ['first_response_headers', 'text'],
] as const;

/**
 * PostgreSQL: the share of each new page of deliveries filled. A delivery gets a version when claimed (its
 * lease: HOT when its page has room) and one when its outcome is recorded, which now carries the first
 * attempt's headers and answer: with a third of each page filled, the outcomes written into a page leave
 * room for the claims of its other rows; at half, one claim in twenty found none and was not HOT.
 */
const FILLFACTOR = 35;

/**
 * Every attempt, wherever it is recorded: reads name this view, never `attempts` alone. A condition on the
 * view reaches both parts (PostgreSQL and SQLite push it into each arm of a `union all`), so an endpoint's
 * attempts by time read `attempts_by_endpoint_time` and `deliveries_first_attempts`, and a delivery's read
 * `attempts_by_delivery` and the deliveries' primary key.
 */
export const ATTEMPT_LOG = sql`create view attempt_log as
  select id, delivery_id, endpoint_id, attempt_number, trigger, status, response_status, response_body,
    request_headers, response_headers, error, duration_ms, created_at
  from attempts
  union all
  select first_attempt_id, id, endpoint_id, 1, 'scheduled', 'success', first_response_status,
    first_response_body, first_request_headers, first_response_headers, null, first_duration_ms, first_attempt_at
  from deliveries where first_attempt_at is not null`;

export async function up(db: Kysely<any>): Promise<void> {
  // One column per statement: SQLite adds no more at once.
  for (const [name, type] of COLUMNS) await db.schema.alterTable('deliveries').addColumn(name, type).execute();
  // An endpoint's first attempts by time (stats by hour, the Svix endpoint attempt list), beside
  // attempts_by_endpoint_time for the others.
  await sql`create index deliveries_first_attempts on deliveries (endpoint_id, first_attempt_at)
    where first_attempt_at is not null`.execute(db);
  await ATTEMPT_LOG.execute(db);
  if (db.getExecutor().adapter instanceof PostgresAdapter)
    await sql`alter table deliveries set (fillfactor = ${sql.lit(FILLFACTOR)})`.execute(db);
}

/** Deliveries whose first attempts are carried back at a time. */
const BATCH = 500;

/** Back to one row of `attempts` per attempt, for a rollback to the release before. */
export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop view attempt_log`.execute(db);
  let after = '';
  for (;;) {
    const rows = await db
      .selectFrom('deliveries')
      .select(['id', 'endpoint_id', ...COLUMNS.map(([name]) => name)])
      .where('first_attempt_at', 'is not', null)
      .where('id', '>', after)
      .orderBy('id')
      .limit(BATCH)
      .execute();
    if (rows.length === 0) break;
    after = rows[rows.length - 1]!.id;
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
        })),
      )
      .execute();
  }
  await sql`drop index deliveries_first_attempts`.execute(db);
  if (db.getExecutor().adapter instanceof PostgresAdapter)
    await sql`alter table deliveries set (fillfactor = 50)`.execute(db);
  for (const [name] of COLUMNS) await db.schema.alterTable('deliveries').dropColumn(name).execute();
}
