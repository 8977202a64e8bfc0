import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Config } from '../config.js';
import type { Store } from '../store/index.js';

/** What every route module is given. */
export interface ApiDeps {
  store: Store;
  config: Config;
}

export type RoutePlugin = FastifyPluginAsyncTypebox<ApiDeps>;

/** Page request from list query parameters (default 50 per page). */
export function pageOf(query: { limit?: number | undefined; cursor?: string | undefined }) {
  return { limit: query.limit ?? 50, cursor: query.cursor };
}
