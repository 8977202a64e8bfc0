import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Config } from '../config.js';
import type { Scope, Store } from '../store/index.js';
import type { Metrics } from '../metrics/registry.js';
import type { SchemaCompiler } from '../event-schemas/compiler.js';
import type { Tracer } from '../tracing/port.js';
import type { Transformations } from '../transformations/index.js';
import { invalid } from './errors.js';
import { timeInput } from './shared/time-input.js';

/** What every route module is given. */
export interface ApiDeps {
  store: Store;
  config: Config;
  /** This process's metrics (src/metrics/): routes count what only they know, such as messages created. */
  metrics: Metrics;
  /** Compiles and keeps the validators of event schemas, off the event loop (src/event-schemas/). */
  schemas: SchemaCompiler;
  /** Trace context and, when OTEL_* asks, spans (src/tracing/). */
  tracer: Tracer;
  /** Endpoints' transformations: their code checked when written, and simulated (src/transformations/). */
  transformations: Transformations;
}

export type RoutePlugin = FastifyPluginAsyncTypebox<ApiDeps>;

/** Page request from list query parameters (default 50 per page). */
export function pageOf(query: { limit?: number | undefined; cursor?: string | undefined }) {
  return { limit: query.limit ?? 50, cursor: query.cursor };
}

/**
 * The application id an `app_id` filter means: applications may be named by id or by uid, as on emit.
 * An unknown name stays as given, so the filter simply matches nothing.
 */
export async function appIdFilter(store: Store, scope: Scope, appId: string | undefined): Promise<string | undefined> {
  if (appId === undefined) return undefined;
  return (await store.applications.get(scope, appId))?.id ?? appId;
}

/** Creation times of a list's `since` (included) and `until` (excluded) query parameters, in milliseconds. */
export function createdWithin(query: { since?: string | undefined; until?: string | undefined }): {
  since?: number;
  until?: number;
} {
  const since = timeInput('query', 'since', query.since);
  const until = timeInput('query', 'until', query.until);
  if (since !== undefined && until !== undefined && since >= until) throw invalid('since must be before until');
  return { ...(since === undefined ? {} : { since }), ...(until === undefined ? {} : { until }) };
}
