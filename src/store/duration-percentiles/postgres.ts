import { type Kysely, sql } from 'kysely';
import { HOUR_MS } from '../../domain/stats-window.js';
import type { Database } from '../schema.js';

/**
 * PostgreSQL: the p50 and p95 of an endpoint's attempt durations per UTC hour, by the ordered-set aggregate
 * `percentile_disc`, which picks the ceil(p·n)-th smallest of the hour's n durations (nearest rank, a
 * duration some attempt took). The rows are the ones the indexes on (endpoint_id, time) select (`attempt_log`); the
 * database sorts each hour's durations, and only one row per hour comes back.
 */
export function durationPercentilesQuery(db: Kysely<Database>, endpointId: string, since: number, until: number) {
  const hour = sql<number>`created_at - created_at % ${sql.lit(HOUR_MS)}`;
  return db
    .selectFrom('attempt_log')
    .select([
      hour.as('start'),
      sql<number>`percentile_disc(0.5) within group (order by duration_ms)`.as('p50'),
      sql<number>`percentile_disc(0.95) within group (order by duration_ms)`.as('p95'),
    ])
    .where('endpoint_id', '=', endpointId)
    .where('created_at', '>=', since)
    .where('created_at', '<', until)
    .groupBy(hour)
    .orderBy(hour);
}
