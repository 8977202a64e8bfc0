import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError } from '../api/errors.js';
import { metricsAccess } from './access.js';
import type { Metrics } from './registry.js';

// The API side of the metrics: every request answered is counted by its route pattern and status, and
// `GET /metrics` serves this process's metrics. The route is public (no API key, so never counted against a
// plan's rate limit); with HERALD_METRICS_TOKEN set it needs that token as a bearer token instead.

/** The `route` label of requests no route matched: one label, however many URLs are tried. */
export const UNMATCHED_ROUTE = 'unmatched';

/** The route pattern (`/api/v1/endpoints/:id`), never the URL: label values must stay few. */
function routeOf(request: FastifyRequest): string {
  return request.is404 ? UNMATCHED_ROUTE : (request.routeOptions?.url ?? UNMATCHED_ROUTE);
}

export function installMetrics(app: FastifyInstance, metrics: Metrics, token: string | null): void {
  // A callback hook, not an async one: counting makes no promise on every request.
  app.addHook('onResponse', (request, reply, done) => {
    const route = routeOf(request);
    metrics.httpRequests.inc({ route, status: String(reply.statusCode) });
    metrics.httpDuration.observe({ route }, reply.elapsedTime / 1000);
    if (reply.statusCode === 429) metrics.rateLimited.inc();
    done();
  });

  const allowed = metricsAccess(token);
  app.get('/metrics', { config: { public: true }, schema: { hide: true } }, async (request, reply) => {
    if (!allowed(request.headers.authorization))
      throw new HttpError(401, 'unauthorized', 'Metrics need Authorization: Bearer <HERALD_METRICS_TOKEN>');
    reply.header('content-type', metrics.contentType).header('cache-control', 'no-store');
    return metrics.render();
  });
}
