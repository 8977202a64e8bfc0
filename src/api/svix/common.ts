import { Type } from 'typebox';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { notFound } from '../errors.js';
import type { Scope, Store } from '../../store/index.js';
import type { ApplicationRow, EndpointRow, MessageRow } from '../../store/schema.js';

// What the Svix-surface routes share: their list parameters and how a path names an application, an
// endpoint (by id or by uid, as Svix's do) and a message (by id or event id).

/** The instance a route plugin is given, for helpers that register routes. */
export type FastifyTypebox = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** Most items a Svix list page holds (Svix's own bound). */
export const MAX_PAGE = 250;

/** Most messages a page holds when it carries their payloads: a page reads every payload on it. */
export const MAX_PAGE_WITH_CONTENT = 50;

/** `limit`, `iterator` (the previous page's) and, for lists that take it, `order`. */
export const listQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, description: 'Items per page (default 50)' })),
  iterator: Type.Optional(Type.String({ maxLength: 256, description: 'The `iterator` of the previous page' })),
};
export const orderQuery = {
  order: Type.Optional(
    Type.Union([Type.Literal('ascending'), Type.Literal('descending')], {
      description: 'ascending: oldest first (the default); descending: newest first',
    }),
  ),
};

export const pageOf = (
  query: { limit?: number | undefined; iterator?: string | undefined; order?: 'ascending' | 'descending' | undefined },
  defaultOrder: 'asc' | 'desc' = 'desc',
) => ({
  limit: query.limit ?? 50,
  cursor: query.iterator,
  order: query.order === undefined ? defaultOrder : query.order === 'ascending' ? ('asc' as const) : ('desc' as const),
});

export const AppParams = Type.Object({ app_id: Type.String({ minLength: 1, maxLength: 256 }) });
export const EndpointParams = Type.Object({
  app_id: Type.String({ minLength: 1, maxLength: 256 }),
  endpoint_id: Type.String({ minLength: 1, maxLength: 256 }),
});
export const MessageParams = Type.Object({
  app_id: Type.String({ minLength: 1, maxLength: 256 }),
  msg_id: Type.String({ minLength: 1, maxLength: 256 }),
});

export async function appOf(store: Store, scope: Scope, appId: string): Promise<ApplicationRow> {
  const app = await store.applications.get(scope, appId);
  if (!app) throw notFound(`application ${appId}`);
  return app;
}

export async function endpointOf(
  store: Store,
  scope: Scope,
  appId: string,
  endpointId: string,
): Promise<{ app: ApplicationRow; endpoint: EndpointRow }> {
  const app = await appOf(store, scope, appId);
  const endpoint = await store.endpoints.find(scope, app.id, endpointId);
  // The Svix surface serves HTTP endpoints only: a destination is not an endpoint Svix's clients can read.
  if (endpoint?.type !== 'http') throw notFound(`endpoint ${endpointId}`);
  return { app, endpoint };
}

/** A message of this application, by id or event id. */
export async function messageOf(store: Store, scope: Scope, appId: string, msgId: string): Promise<MessageRow> {
  const application = await appOf(store, scope, appId);
  const message = await store.messages.find(scope, msgId);
  if (!message || message.app_id !== application.id) throw notFound(`message ${msgId}`);
  return message;
}
