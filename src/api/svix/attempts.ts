import { Type } from 'typebox';
import { notFound } from '../errors.js';
import { scopeOf } from '../auth.js';
import type { RoutePlugin } from '../deps.js';
import { timeInput } from '../shared/time-input.js';
import type { AttemptStatus } from '../../domain/states.js';
import {
  EndpointParams,
  endpointOf,
  listQuery,
  MAX_PAGE_WITH_CONTENT,
  MessageParams,
  messageOf,
  pageOf,
} from './common.js';
import { svixErrors } from './errors.js';
import {
  EndpointMessageOut,
  endpointMessageOut,
  MessageAttemptOut,
  messageAttemptOut,
  MessageEndpointOut,
  messageEndpointOut,
  SvixListOf,
  svixList,
} from './models.js';

// Attempts and deliveries as Svix shows them. Herald records an attempt once it has ended, so an attempt
// is `success` (0) or `failed` (2); a delivery still waiting is a message's `pending` (1).

const attemptQuery = {
  ...listQuery,
  status: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 3, description: '0 success, 1 pending, 2 failed, 3 sending' }),
  ),
  before: Type.Optional(Type.String({ format: 'date-time' })),
  after: Type.Optional(Type.String({ format: 'date-time' })),
};

/** Svix's attempt status as Herald's; pending and sending attempts are never recorded, so they match none. */
function attemptStatus(status: number | undefined): AttemptStatus | 'none' | undefined {
  if (status === undefined) return undefined;
  return status === 0 ? 'success' : status === 2 ? 'failed' : 'none';
}

export const svixAttemptRoutes: RoutePlugin = async (app, { store }) => {
  const tags = ['svix: message attempt'];
  const emptyPage = { items: [], hasMore: false, nextCursor: null };

  app.get(
    '/api/v1/app/:app_id/attempt/endpoint/:endpoint_id',
    {
      schema: {
        summary: "An endpoint's attempts, newest first",
        tags,
        params: EndpointParams,
        querystring: Type.Object(attemptQuery),
        response: { 200: SvixListOf(MessageAttemptOut), ...svixErrors(404) },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      const { query } = request;
      const { endpoint } = await endpointOf(store, scope, request.params.app_id, request.params.endpoint_id);
      const status = attemptStatus(query.status);
      if (status === 'none') return svixList(emptyPage, (a) => a);
      const page = await store.attempts.list(scope, pageOf(query), {
        endpointId: endpoint.id,
        status,
        before: timeInput('query', 'before', query.before),
        after: timeInput('query', 'after', query.after),
      });
      return svixList(page, (a) => messageAttemptOut(a, false));
    },
  );

  app.get(
    '/api/v1/app/:app_id/attempt/msg/:msg_id',
    {
      schema: {
        summary: "A message's attempts, newest first (of one endpoint with endpoint_id)",
        tags,
        params: MessageParams,
        querystring: Type.Object({ ...attemptQuery, endpoint_id: Type.Optional(Type.String({ maxLength: 256 })) }),
        response: { 200: SvixListOf(MessageAttemptOut), ...svixErrors(404) },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      const { query } = request;
      const message = await messageOf(store, scope, request.params.app_id, request.params.msg_id);
      const endpointId =
        query.endpoint_id === undefined
          ? undefined
          : (await endpointOf(store, scope, request.params.app_id, query.endpoint_id)).endpoint.id;
      const status = attemptStatus(query.status);
      if (status === 'none') return svixList(emptyPage, (a) => a);
      const page = await store.attempts.list(scope, pageOf(query), {
        messageId: message.id,
        endpointId,
        status,
        before: timeInput('query', 'before', query.before),
        after: timeInput('query', 'after', query.after),
      });
      return svixList(page, (a) => messageAttemptOut(a, false));
    },
  );

  app.get(
    '/api/v1/app/:app_id/msg/:msg_id/attempt/:attempt_id',
    {
      schema: {
        summary: "One attempt, with the receiver's answer as stored",
        tags,
        params: Type.Object({ ...MessageParams.properties, attempt_id: Type.String({ minLength: 1, maxLength: 256 }) }),
        response: { 200: MessageAttemptOut, ...svixErrors(404) },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      const message = await messageOf(store, scope, request.params.app_id, request.params.msg_id);
      const attempt = await store.attempts.get(scope, message.id, request.params.attempt_id);
      if (!attempt) throw notFound(`attempt ${request.params.attempt_id}`);
      return messageAttemptOut(attempt, true);
    },
  );

  app.get(
    '/api/v1/app/:app_id/endpoint/:endpoint_id/msg',
    {
      schema: {
        summary: 'The messages an endpoint was sent, with where each stands, newest first',
        tags,
        params: EndpointParams,
        querystring: Type.Object({ ...listQuery, with_content: Type.Optional(Type.Boolean()) }),
        response: { 200: SvixListOf(EndpointMessageOut), ...svixErrors(404) },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      const { endpoint } = await endpointOf(store, scope, request.params.app_id, request.params.endpoint_id);
      const content = request.query.with_content !== false;
      const pageRequest = pageOf(request.query);
      if (content) pageRequest.limit = Math.min(pageRequest.limit, MAX_PAGE_WITH_CONTENT);
      const page = await store.deliveries.list(scope, pageRequest, { endpointId: endpoint.id });
      const ids = page.items.map((d) => d.message_id);
      const messages = new Map((await store.messages.getMany(scope, ids)).map((m) => [m.id, m]));
      const payloads = content ? await store.messages.readablePayloads(ids) : new Map<string, string>();
      // A delivery whose message retention removed is left out.
      const items = page.items.filter((d) => messages.has(d.message_id));
      return svixList({ ...page, items }, (d) =>
        endpointMessageOut(messages.get(d.message_id)!, d, payloads.get(d.message_id)),
      );
    },
  );

  app.get(
    '/api/v1/app/:app_id/msg/:msg_id/endpoint',
    {
      schema: {
        summary: 'The endpoints a message was sent to, with where each delivery stands',
        tags,
        params: MessageParams,
        querystring: Type.Object(listQuery),
        response: { 200: SvixListOf(MessageEndpointOut), ...svixErrors(404) },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      const message = await messageOf(store, scope, request.params.app_id, request.params.msg_id);
      const page = await store.deliveries.list(scope, pageOf(request.query), { messageId: message.id });
      const endpoints = new Map(
        (
          await store.endpoints.getMany(
            scope,
            page.items.map((d) => d.endpoint_id),
          )
        ).map((e) => [e.id, e]),
      );
      const items = page.items.filter((d) => endpoints.has(d.endpoint_id));
      return svixList({ ...page, items }, (d) => messageEndpointOut(endpoints.get(d.endpoint_id)!, d));
    },
  );

  app.post(
    '/api/v1/app/:app_id/msg/:msg_id/endpoint/:endpoint_id/resend',
    {
      schema: {
        summary: 'Send a message to an endpoint again (one more attempt of its delivery)',
        tags,
        params: Type.Object({
          ...MessageParams.properties,
          endpoint_id: Type.String({ minLength: 1, maxLength: 256 }),
        }),
        response: { 202: Type.Null(), ...svixErrors(404) },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const message = await messageOf(store, scope, request.params.app_id, request.params.msg_id);
      const { endpoint } = await endpointOf(store, scope, request.params.app_id, request.params.endpoint_id);
      const page = await store.deliveries.list(scope, { limit: 1 }, { messageId: message.id, endpointId: endpoint.id });
      const delivery = page.items[0];
      if (!delivery) throw notFound(`a delivery of message ${message.id} to endpoint ${request.params.endpoint_id}`);
      await store.deliveries.retry(scope, delivery.id);
      reply.code(202);
      return null;
    },
  );
};
