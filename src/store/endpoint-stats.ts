import { sql } from 'kysely';
import { HOUR_MS, type Bucket } from '../domain/stats-window.js';
import type { StoreContext } from './common.js';

/**
 * Attempts of one endpoint counted by hour, read from the index on (endpoint_id, created_at). The SQL is
 * the same on both databases (integer division of an integer column, count of a CASE), so it is written
 * once. The caller checks that the endpoint is in the caller's scope.
 */
export class EndpointStats {
  constructor(private readonly ctx: StoreContext) {}

  /** Hours (UTC, by start in ms) of [since, until) that had attempts, in time order; hours without any are left out. */
  async attemptsByHour(endpointId: string, since: number, until: number): Promise<Bucket[]> {
    const rows = await this.attemptsByHourQuery(endpointId, since, until).execute();
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
      .selectFrom('attempts')
      .select([
        hour.as('start'),
        sql<number>`count(case when status = 'success' then 1 end)`.as('success'),
        sql<number>`count(case when status <> 'success' then 1 end)`.as('failure'),
      ])
      .where('endpoint_id', '=', endpointId)
      .where('created_at', '>=', since)
      .where('created_at', '<', until)
      .groupBy(hour)
      .orderBy(hour);
  }
}
