import { invalid, notFound } from './errors.js';
import { scopeOf } from './auth.js';
import type { RoutePlugin } from './deps.js';
import { EndpointStats, errors, IdParams, StatsQuery } from './schemas.js';
import { iso } from './serialize.js';
import { hourlyBuckets, type StatsWindow, statsWindow, totals } from '../domain/stats-window.js';
import type { Store } from '../store/index.js';

// An endpoint's attempts by hour over a window (at most 31 days, by default the last 24 hours), counted and
// with the p50 and p95 of their durations: what the console's and the portal's charts draw and the
// endpoints list's success ratio.

/** The window a query asks for, or a 400. */
export function windowOf(query: { since?: string; until?: string }, now: number): StatsWindow {
  const window = statsWindow(query, now);
  if (typeof window === 'string') throw invalid(window);
  return window;
}

/** The stats object of an endpoint the caller may see. */
export async function endpointStats(store: Store, endpointId: string, window: StatsWindow) {
  const buckets = hourlyBuckets(
    window,
    await store.endpointStats.attemptsByHour(endpointId, window.since, window.until),
  );
  const durations = new Map(
    (await store.endpointStats.durationsByHour(endpointId, window.since, window.until)).map((hour) => [
      hour.start,
      hour,
    ]),
  );
  return {
    object: 'endpoint_stats' as const,
    endpoint_id: endpointId,
    since: iso(window.since),
    until: iso(window.until),
    buckets: buckets.map(({ start, success, failure }) => ({
      start: iso(start),
      success,
      failure,
      p50_ms: durations.get(start)?.p50 ?? null,
      p95_ms: durations.get(start)?.p95 ?? null,
    })),
    totals: totals(buckets),
  };
}

export const endpointStatsRoutes: RoutePlugin = async (app, { store }) => {
  app.get(
    '/api/v1/endpoints/:id/stats',
    {
      schema: {
        summary:
          "Count the endpoint's attempts by hour (success and failure, p50 and p95 duration) over a window of at most 31 days",
        tags: ['endpoints'],
        params: IdParams,
        querystring: StatsQuery,
        response: { 200: EndpointStats, ...errors(400, 401, 404, 429) },
      },
    },
    async (request) => {
      const window = windowOf(request.query, store.ctx.now());
      const endpoint = await store.endpoints.get(scopeOf(request), request.params.id);
      if (!endpoint) throw notFound(`endpoint ${request.params.id}`);
      return endpointStats(store, endpoint.id, window);
    },
  );
};
