import { notFound } from './errors.js';
import { scopeOf } from './auth.js';
import type { RoutePlugin } from './deps.js';
import { IdParams } from './schemas/common.js';
import { errors } from './schemas/errors.js';
import { EndpointStats, StatsQuery } from './schemas/stats.js';
import { endpointStats } from './shared/endpoint-stats.js';
import { windowOf } from './shared/stats-window.js';

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
