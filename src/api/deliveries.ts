import { messageTrace } from '../domain/trace-context.js';
import { Type } from 'typebox';
import { notFound } from './errors.js';
import { scopeOf } from './auth.js';
import { appIdFilter, createdWithin, pageOf, type RoutePlugin } from './deps.js';
import { IdParams } from './schemas/common.js';
import { errors } from './schemas/errors.js';
import { CreatedWithin, Filter, ListOf, pageQuery } from './schemas/pagination.js';
import { Delivery, DeliveryStatus, DeliveryWithAttempts } from './schemas/deliveries.js';
import { attemptToApi, deliveryToApi, list } from './serialize.js';

export const deliveryRoutes: RoutePlugin = async (app, { store }) => {
  app.get(
    '/api/v1/deliveries',
    {
      schema: {
        summary:
          'List deliveries, newest first, filtered by message, endpoint, application, event type, status or time',
        tags: ['deliveries'],
        querystring: Type.Object({
          ...pageQuery('delivery'),
          message_id: Filter,
          endpoint_id: Filter,
          app_id: Filter,
          event_type: Filter,
          status: Type.Optional(DeliveryStatus),
          ...CreatedWithin,
        }),
        response: { 200: ListOf(Delivery), ...errors(400, 401, 429) },
      },
    },
    async (request) => {
      const { message_id, endpoint_id, app_id, event_type, status } = request.query;
      const scope = scopeOf(request);
      const appId = await appIdFilter(store, scope, app_id);
      const page = await store.deliveries.list(scope, pageOf(request.query), {
        messageId: message_id,
        endpointId: endpoint_id,
        appId,
        eventType: event_type,
        status,
        ...createdWithin(request.query),
      });
      return list(page, deliveryToApi);
    },
  );

  app.get(
    '/api/v1/deliveries/:id',
    {
      schema: {
        summary: 'Get a delivery with its most recent attempts, newest first',
        tags: ['deliveries'],
        params: IdParams,
        response: { 200: DeliveryWithAttempts, ...errors(401, 404, 429) },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      const row = await store.deliveries.row(scope, request.params.id);
      if (!row) throw notFound(`delivery ${request.params.id}`);
      const [attempts, message] = await Promise.all([
        store.deliveries.recentAttempts(row),
        store.messages.get(scope, row.message_id),
      ]);
      const trace = messageTrace(row.message_id, message?.traceparent ?? null, message?.tracestate ?? null);
      return {
        ...deliveryToApi({ ...row, event_type: message?.event_type ?? null }),
        trace_id: trace.traceId,
        attempts: attempts.map((a) => attemptToApi(a, row.message_id)),
      };
    },
  );

  app.post(
    '/api/v1/deliveries/:id/retry',
    {
      schema: {
        summary: 'Queue one more attempt of a delivery',
        tags: ['deliveries'],
        params: IdParams,
        response: {
          200: Type.Object(
            {
              delivery_id: Type.String(),
              status: Type.Literal('enqueued'),
              attempt_number: Type.Integer(),
            },
            { examples: [{ delivery_id: 'dlv_01jd5x3k8m2n4p6q8r0s2t4v6w', status: 'enqueued', attempt_number: 4 }] },
          ),
          ...errors(401, 404, 429),
        },
      },
    },
    async (request) => {
      const attemptNumber = await store.deliveries.retry(scopeOf(request), request.params.id);
      if (attemptNumber === undefined) throw notFound(`delivery ${request.params.id}`);
      return { delivery_id: request.params.id, status: 'enqueued' as const, attempt_number: attemptNumber };
    },
  );
};
