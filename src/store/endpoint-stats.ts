import { sql } from 'kysely';
import { HOUR_MS, type Bucket } from '../domain/stats-window.js';
import { readOffLoop, type StoreContext } from './common.js';
import * as postgres from './duration-percentiles/postgres.js';
import * as sqlite from './duration-percentiles/sqlite.js';

/** The median and 95th percentile of one hour's attempt durations (ms), for an hour that had attempts. */
export interface HourDurations {
  start: number;
  p50: number;
  p95: number;
}

/**
 * Attempts of one endpoint by hour, read from the indexes on (endpoint_id, created_at) of `attempts` and
 * (endpoint_id, first_attempt_at) of `deliveries`, through the `attempt_log` view: their counts, whose
 * SQL is the same on both databases (integer division of an integer column, count of a CASE) and so
 * written once, and their durations' percentiles, whose SQL is each database's own
 * (src/store/duration-percentiles/). Both read up to a month of attempts, so they run off the event loop
 * (readOffLoop). The caller checks that the endpoint is in the caller's scope.
 */
export class EndpointStats {
  constructor(private readonly ctx: StoreContext) {}

  /** Hours (UTC, by start in ms) of [since, until) that had attempts, in time order; hours without any are left out. */
  async attemptsByHour(endpointId: string, since: number, until: number): Promise<Bucket[]> {
    const rows = await readOffLoop(this.ctx, this.attemptsByHourQuery(endpointId, since, until));
    return rows.map((row) => ({
      start: Number(row.start),
      success: Number(row.success),
      failure: Number(row.failure),
    }));
  }

  /** attemptsByHour's statement (its plan is checked in test/store/endpoint-stats.test.ts). */
  attemptsByHourQuery(endpointId: string, since: number, until: number) {
    const hour = sql<number>`created_at - created_at % ${sql.lit(HOUR_MS)}`;
    return this.ctx.db
      .selectFrom('attempt_log')
      .select([
        hour.as('start'),
        sql<number>`count(case when status = 'success' then 1 end)`.as('success'),
        sql<number>`count(case when status = 'failed' then 1 end)`.as('failure'),
      ])
      .where('endpoint_id', '=', endpointId)
      .where('created_at', '>=', since)
      .where('created_at', '<', until)
      .groupBy(hour)
      .orderBy(hour);
  }

  /** Hours of [since, until) that had attempts, in time order, with the p50 and p95 of their durations. */
  async durationsByHour(endpointId: string, since: number, until: number): Promise<HourDurations[]> {
    const rows = await readOffLoop(this.ctx, this.durationsByHourQuery(endpointId, since, until));
    return rows.map((row) => ({ start: Number(row.start), p50: Number(row.p50), p95: Number(row.p95) }));
  }

  /** durationsByHour's statement, the database's own (its plan is checked in test/store/endpoint-stats.test.ts). */
  durationsByHourQuery(endpointId: string, since: number, until: number) {
    const dialect = this.ctx.dialect === 'postgres' ? postgres : sqlite;
    return dialect.durationPercentilesQuery(this.ctx.db, endpointId, since, until);
  }
}
