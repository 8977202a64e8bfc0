import { type Kysely, sql } from 'kysely';
import { HOUR_MS } from '../../domain/stats-window.js';
import type { Database } from '../schema.js';

/**
 * SQLite: the p50 and p95 of an endpoint's attempt durations per UTC hour. SQLite has no percentile
 * aggregate, so window functions number each hour's durations in order (`position`, from 1) and count
 * them (`hour_total`, n), and the p-th percentile is the duration at position ceil(p·n), written in
 * integer arithmetic as (100·p·n + 99) / 100: the same nearest rank PostgreSQL's `percentile_disc` picks.
 * The rows are the ones the indexes on (endpoint_id, time) select (`attempt_log`); SQLite sorts them in its own
 * temporary storage, and only one row per hour comes back.
 */
export function durationPercentilesQuery(db: Kysely<Database>, endpointId: string, since: number, until: number) {
  const hour = sql<number>`created_at - created_at % ${sql.lit(HOUR_MS)}`;
  const ranked = db
    .selectFrom('attempt_log')
    .select([
      hour.as('start'),
      'duration_ms',
      sql<number>`row_number() over (partition by ${hour} order by duration_ms)`.as('position'),
      sql<number>`count(*) over (partition by ${hour})`.as('hour_total'),
    ])
    .where('endpoint_id', '=', endpointId)
    .where('created_at', '>=', since)
    .where('created_at', '<', until);
  const at = (percent: number) =>
    sql<number>`max(case when position = (${sql.lit(percent)} * hour_total + 99) / 100 then duration_ms end)`;
  return db
    .selectFrom(ranked.as('ranked'))
    .select(['start', at(50).as('p50'), at(95).as('p95')])
    .groupBy('start')
    .orderBy('start');
}
