import { notFound } from './errors.js';
import { scopeOf } from './auth.js';
import type { RoutePlugin } from './deps.js';
import { IdParams } from './schemas/common.js';
import { errors } from './schemas/errors.js';
import { ApplicationStats, StatsQuery } from './schemas/stats.js';
import { windowOf } from './shared/stats-window.js';
import { iso } from './serialize.js';
import { type Counts, MAX_EVENT_TYPES, statsByType, type TypeCounts } from '../domain/event-type-stats.js';
import type { StatsWindow } from '../domain/stats-window.js';
import type { Store } from '../store/index.js';

// An application's attempts (to all its endpoints) counted by hour and by event type over a window (at
// most 31 days, by default the last 24 hours): the 20 event types with the most attempts by name, the
// others summed as `other`, so the answer stays small however many event types there are.

const counts = ({ success, failure }: Counts) => ({ success, failure });
const typed = (types: TypeCounts[]) =>
  types.map(({ eventType, success, failure }) => ({ event_type: eventType, success, failure }));

/** The stats object of an application the caller may see. */
export async function applicationStats(store: Store, appId: string, window: StatsWindow) {
  const stats = statsByType(
    window,
    await store.applicationStats.attemptsByHourAndType(appId, window.since, window.until, MAX_EVENT_TYPES),
  );
  return {
    object: 'application_stats' as const,
    app_id: appId,
    since: iso(window.since),
    until: iso(window.until),
    event_types: typed(stats.eventTypes),
    other: counts(stats.other),
    buckets: stats.buckets.map((bucket) => ({
      start: iso(bucket.start),
      ...counts(bucket),
      event_types: typed(bucket.eventTypes),
      other: counts(bucket.other),
    })),
    totals: counts(stats.totals),
  };
}

export const applicationStatsRoutes: RoutePlugin = async (app, { store }) => {
  app.get(
    '/api/v1/applications/:id/stats',
    {
      schema: {
        summary:
          "Count the application's attempts by hour and event type (the 20 busiest by name, the rest as other) over a window of at most 31 days",
        tags: ['applications'],
        params: IdParams,
        querystring: StatsQuery,
        response: { 200: ApplicationStats, ...errors(400, 401, 404, 429) },
      },
    },
    async (request) => {
      const window = windowOf(request.query, store.ctx.now());
      const application = await store.applications.get(scopeOf(request), request.params.id);
      if (!application) throw notFound(`application ${request.params.id}`);
      return applicationStats(store, application.id, window);
    },
  );
};
