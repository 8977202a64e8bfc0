import { sql } from 'kysely';
import type { TypeHourCounts } from '../domain/event-type-stats.js';
import { HOUR_MS } from '../domain/stats-window.js';
import { readOffLoop, type StoreContext } from './common.js';

/**
 * Attempts to an application's endpoints counted by hour and by their message's event type. The
 * attempts are read (`attempt_log`) through the indexes by endpoint and time for each of the application's
 * endpoints, and each one's event type through its delivery and message (primary keys). The SQL is the
 * same on both databases (common table expressions, a LIMIT, a LEFT JOIN) but for the endpoints' condition
 * (AMONG), so it is written once; it
 * reads a month of attempts, so it runs off the event loop (readOffLoop). The caller checks that the
 * application is in the caller's scope.
 */
/**
 * `a.endpoint_id` is one of `ids`, bound as one parameter, as a condition on `attempt_log` itself: each of the
 * view's two parts reads its own index by endpoint and time. The ids are read first, not joined: PostgreSQL
 * plans a join to the application's endpoints as one that does not reach the view's second part (a subquery
 * with a condition of its own), and reads that part whole; and an array it sees when planning gives it the
 * real number of endpoints to estimate the rows from.
 */
const AMONG = {
  sqlite: (ids: readonly string[]) =>
    sql<boolean>`a.endpoint_id in (select value from json_each(${JSON.stringify(ids)}))`,
  postgres: (ids: readonly string[]) => sql<boolean>`a.endpoint_id = any(${ids}::text[])`,
};

export class ApplicationStats {
  constructor(private readonly ctx: StoreContext) {}

  /**
   * Hours of [since, until) that had attempts, in time order, each with a row per event type among the
   * `top` with the most attempts in the window (ties by name) and one row (eventType null) for the others
   * together: at most (top + 1) rows an hour, however many event types there are.
   */
  async attemptsByHourAndType(appId: string, since: number, until: number, top: number): Promise<TypeHourCounts[]> {
    const endpoints = await this.ctx.db.selectFrom('endpoints').select('id').where('app_id', '=', appId).execute();
    const ids = endpoints.map((e) => e.id);
    const rows = await readOffLoop(this.ctx, this.attemptsByHourAndTypeQuery(ids, since, until, top));
    return rows.map((row) => ({
      start: Number(row.start),
      eventType: row.event_type,
      success: Number(row.success),
      failure: Number(row.failure),
    }));
  }

  /** attemptsByHourAndType's statement (its plan is checked in test/store/application-stats.test.ts). */
  attemptsByHourAndTypeQuery(endpointIds: readonly string[], since: number, until: number, top: number) {
    const hour = sql<number>`a.created_at - a.created_at % ${sql.lit(HOUR_MS)}`;
    return this.ctx.db
      .with('counted', (db) =>
        db
          .selectFrom('attempt_log as a')
          .innerJoin('deliveries as d', 'd.id', 'a.delivery_id')
          .innerJoin('messages as m', 'm.id', 'd.message_id')
          .select([
            hour.as('start'),
            'm.event_type',
            sql<number>`count(case when a.status = 'success' then 1 end)`.as('success'),
            sql<number>`count(case when a.status = 'failed' then 1 end)`.as('failure'),
          ])
          .where(AMONG[this.ctx.dialect](endpointIds))
          .where('a.created_at', '>=', since)
          .where('a.created_at', '<', until)
          .groupBy([hour, 'm.event_type']),
      )
      .with('top', (db) =>
        db
          .selectFrom('counted')
          .select('event_type')
          .groupBy('event_type')
          .orderBy(sql`sum(success + failure)`, 'desc')
          .orderBy('event_type')
          .limit(top),
      )
      .selectFrom('counted as c')
      .leftJoin('top as t', 't.event_type', 'c.event_type')
      .select([
        'c.start',
        't.event_type',
        sql<number>`sum(c.success)`.as('success'),
        sql<number>`sum(c.failure)`.as('failure'),
      ])
      .groupBy(['c.start', 't.event_type'])
      .orderBy('c.start')
      .orderBy('t.event_type');
  }
}
