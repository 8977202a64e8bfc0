import { Type } from 'typebox';
import { conflict, invalid, notFound, HttpError } from './errors.js';
import { scopeOf } from './auth.js';
import { type ApiDeps, appIdFilter, createdWithin, pageOf, type RoutePlugin } from './deps.js';
import {
  Delivery,
  EmitResponse,
  errors,
  CreatedWithin,
  Filter,
  IdParams,
  ListOf,
  Message,
  MessageChannels,
  MessagePayload,
  MessageTags,
  cursorOf,
  meaning,
  pageQuery,
  withExample,
} from './schemas.js';
import { deliveryToApi, list, messagePayloadToApi, messageToApi } from './serialize.js';
import type { EmitRequest, EmitResult } from '../store/messages.js';
import type { Scope } from '../store/index.js';
import type { MessageRow } from '../store/schema.js';
import { schemaFailure } from '../domain/event-schema.js';
import { schemaValidator } from './event-types.js';
import { formatTraceparent, messageTrace } from '../domain/trace-context.js';
import type { FastifyRequest } from 'fastify';

const IdempotencyKey = Type.String({
  minLength: 1,
  maxLength: 255,
  description:
    "Your key for this emit (an order id, say): a repeat with the same key within HERALD_IDEMPOTENCY_TTL (24 h) creates nothing and answers 200 with the first emit's message and delivery_ids. The header wins over the body field",
  examples: ['order-1001'],
});
const EventTypeName = Type.String({ minLength: 1, maxLength: 255 });
const Payload = Type.Object(
  {},
  { additionalProperties: true, description: 'Free-form JSON object delivered to receivers as `data`' },
);

const EmitBody = Type.Object(
  {
    app_id: Type.String({ minLength: 1, maxLength: 256, description: 'The application: its app_… id or its uid' }),
    event_type: EventTypeName,
    payload: Payload,
    idempotency_key: Type.Optional(IdempotencyKey),
    channels: Type.Optional(MessageChannels),
    tags: Type.Optional(MessageTags),
  },
  {
    examples: [
      {
        app_id: 'acme',
        event_type: 'invoice.paid',
        payload: { invoice_id: 'inv_1001', amount: 4200, currency: 'usd' },
        tags: ['region-eu'],
      },
    ],
  },
);

const SendTestBody = Type.Object(
  {
    app_id: Type.String({ minLength: 1, maxLength: 256 }),
    event_type: Type.Optional(EventTypeName),
    payload: Type.Optional(Payload),
  },
  { examples: [{ app_id: 'acme', event_type: 'invoice.paid' }] },
);

const SendTestResponse = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('message'),
    status: Type.Literal('accepted'),
    event_type: Type.String(),
    app_id: Type.String(),
    delivery_ids: Type.Array(Type.String()),
    note: Type.String(),
  },
  {
    examples: [
      {
        id: 'evt_01jd5x3k8m2n4p6q8r0s2t4v6w',
        object: 'message',
        status: 'accepted',
        event_type: 'invoice.paid',
        app_id: 'app_01jd5x3k8m2n4p6q8r0s2t4v6w',
        delivery_ids: ['dlv_01jd5x3k8m2n4p6q8r0s2t4v6w'],
        note: 'Sample event sent with the catalog example payload',
      },
    ],
  },
);

const ReplayResponse = Type.Object(
  {
    message_id: Type.String(),
    delivery_ids: Type.Array(Type.String()),
    status: Type.Literal('enqueued'),
  },
  {
    examples: [
      {
        message_id: 'evt_01jd5x3k8m2n4p6q8r0s2t4v6w',
        delivery_ids: ['dlv_01jd5x3k8m2n4p6q8r0s2t4v7a', 'dlv_01jd5x3k8m2n4p6q8r0s2t4v7b'],
        status: 'enqueued',
      },
    ],
  },
);

/** Turns a store refusal into the contract's error. */
function accepted(result: EmitResult, appId: string, eventType: string): Extract<EmitResult, { ok: true }> {
  if (result.ok) return result;
  if (result.reason === 'app_not_found') throw notFound(`application ${appId}`);
  if (result.reason === 'event_id_taken') throw conflict('a message with this event id exists already');
  throw invalid(`event_type "${eventType}" is not in this environment's event catalog`);
}

/** Emits a message after checking its payload against its event type's schema (both surfaces' emit). */
export async function emit(
  { store, metrics, schemas, tracer }: Pick<ApiDeps, 'store' | 'metrics' | 'schemas' | 'tracer'>,
  request: FastifyRequest,
  scope: Scope,
  appId: string,
  eventType: string,
  payload: object,
  idempotencyKey: string | null,
  extra: Pick<EmitRequest, 'eventId' | 'channels' | 'tags' | 'payloadExpiresAt'> = {},
) {
  // The payload must satisfy the event type's schema, if its catalog entry has one. This is part of
  // checking the request, so it comes before the idempotency key is looked at, like the body's shape.
  const payloadJson = JSON.stringify(payload);
  const schemaJson = await store.eventTypes.schemaOf(scope, eventType);
  if (schemaJson !== null) {
    const validate = await schemaValidator(schemas, schemaJson, eventType);
    const failure = schemaFailure(validate, payload, 'payload', payloadJson.length);
    if (failure) throw invalid(`${failure}, in the schema of event type ${eventType}`);
  }
  // The message keeps the context its attempts descend from: the emit's span, or the caller's own.
  const result = await tracer.emit(tracer.requestContext(request), { appId, eventType }, (kept) =>
    store.messages.emit({
      scope,
      appId,
      eventType,
      payloadJson,
      idempotencyKey,
      ...extra,
      traceparent: kept && formatTraceparent(kept),
      tracestate: kept?.tracestate ?? null,
    }),
  );
  const created = accepted(result, appId, eventType);
  const { message } = created;
  // The request's log line names the message's trace.
  request.traceId = messageTrace(message.id, message.traceparent, message.tracestate).traceId;
  if (!created.idempotent) metrics.emitted(scope.livemode);
  return created;
}

/** A message's stored payload as the payload routes answer it (API and portal); 410 payload_gone once it is not stored. */
export async function messagePayload(store: ApiDeps['store'], message: MessageRow) {
  const payloadJson = await store.messages.readablePayload(message.id);
  if (payloadJson === undefined)
    throw new HttpError(410, 'payload_gone', `the payload of message ${message.id} is no longer stored`);
  return messagePayloadToApi(message, payloadJson);
}

export const messageRoutes: RoutePlugin = async (app, deps) => {
  const { store } = deps;
  app.get(
    '/api/v1/messages',
    {
      schema: {
        summary: 'List recent messages, newest first',
        tags: ['messages'],
        querystring: Type.Object({
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, description: 'At most 50 (default 50)' })),
          cursor: cursorOf('message'),
          app_id: Filter,
          event_type: Filter,
          channel: Filter,
          tag: Filter,
          ...CreatedWithin,
        }),
        response: { 200: ListOf(Message), ...errors(400, 401, 429) },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      const appId = await appIdFilter(store, scope, request.query.app_id);
      const { since, until } = createdWithin(request.query);
      const page = await store.messages.list(scope, pageOf(request.query), {
        appId,
        eventType: request.query.event_type,
        channel: request.query.channel,
        tag: request.query.tag,
        // The store's bounds are both exclusive; times are whole milliseconds.
        ...(since === undefined ? {} : { after: since - 1 }),
        ...(until === undefined ? {} : { before: until }),
      });
      return list(page, messageToApi);
    },
  );

  app.post(
    '/api/v1/messages',
    {
      schema: {
        summary: 'Emit a message to every subscribed endpoint of an application',
        tags: ['messages'],
        headers: Type.Object({ 'idempotency-key': Type.Optional(IdempotencyKey) }),
        body: EmitBody,
        response: {
          200: meaning(
            withExample(EmitResponse, {
              ...(EmitResponse as unknown as { examples: object[] }).examples[0],
              idempotent: true,
            }),
            'Idempotent repeat: the earlier answer to this idempotency-key (idempotent: true); nothing new was created',
          ),
          201: meaning(EmitResponse, 'Created: the message is stored and its deliveries are queued'),
          ...errors(400, 401, 404, 413, 429),
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      // The header wins over the body key when both are sent.
      const key = request.headers['idempotency-key'] ?? body.idempotency_key ?? null;
      const result = await emit(deps, request, scopeOf(request), body.app_id, body.event_type, body.payload, key, {
        channels: body.channels,
        tags: body.tags,
      });
      reply.code(result.idempotent ? 200 : 201);
      return { ...messageToApi(result.message), delivery_ids: result.deliveryIds, idempotent: result.idempotent };
    },
  );

  app.post(
    '/api/v1/messages/send-test',
    {
      schema: {
        summary: 'Emit a sample event through the real pipeline (Test mode only)',
        tags: ['messages'],
        body: SendTestBody,
        response: { 202: SendTestResponse, ...errors(400, 401, 403, 404, 429) },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      // A sample event must never reach a live receiver.
      if (scope.livemode)
        throw new HttpError(403, 'test_mode_only', 'send-test is only available with a Test key (sk_test_)');
      const eventType = request.body.event_type ?? 'invoice.paid';
      let payload: object | undefined = request.body.payload;
      if (payload === undefined) {
        const entry = await store.eventTypes.get(scope, eventType);
        if (!entry) throw invalid(`event_type "${eventType}" is not in this environment's event catalog`);
        payload = JSON.parse(entry.example_json) as object;
      }
      const result = await emit(deps, request, scope, request.body.app_id, eventType, payload, null);
      reply.code(202);
      return {
        id: result.message.id,
        object: 'message' as const,
        status: 'accepted' as const,
        event_type: result.message.event_type,
        app_id: result.message.app_id,
        delivery_ids: result.deliveryIds,
        note:
          request.body.payload === undefined
            ? 'Sample event sent with the catalog example payload'
            : 'Sample event sent with the given payload',
      };
    },
  );

  app.get(
    '/api/v1/messages/:id',
    {
      schema: {
        summary: 'Message metadata (never the payload)',
        tags: ['messages'],
        params: IdParams,
        response: { 200: Message, ...errors(401, 404, 429) },
      },
    },
    async (request) => {
      const message = await store.messages.get(scopeOf(request), request.params.id);
      if (!message) throw notFound(`message ${request.params.id}`);
      return messageToApi(message);
    },
  );

  app.get(
    '/api/v1/messages/:id/payload',
    {
      schema: {
        summary: "A message's stored payload, as receivers get it in `data`",
        description:
          'Message reads carry metadata only; this reads the payload on demand. 410 payload_gone when the message is still stored but its payload is not (expunged, past its own retention, or purged).',
        tags: ['messages'],
        params: IdParams,
        response: { 200: MessagePayload, ...errors(401, 404, 410, 429) },
      },
    },
    async (request) => {
      const message = await store.messages.get(scopeOf(request), request.params.id);
      if (!message) throw notFound(`message ${request.params.id}`);
      return messagePayload(store, message);
    },
  );

  app.post(
    '/api/v1/messages/:id/replay',
    {
      schema: {
        summary: 'Replay a message: new deliveries for the endpoints subscribed now',
        tags: ['messages'],
        params: IdParams,
        response: { 200: ReplayResponse, ...errors(401, 404, 429) },
      },
    },
    async (request) => {
      const deliveryIds = await store.messages.replay(scopeOf(request), request.params.id);
      if (!deliveryIds) throw notFound(`message ${request.params.id}`);
      return { message_id: request.params.id, delivery_ids: deliveryIds, status: 'enqueued' as const };
    },
  );

  app.get(
    '/api/v1/messages/:id/deliveries',
    {
      schema: {
        summary: "List a message's deliveries",
        tags: ['messages'],
        params: IdParams,
        querystring: Type.Object(pageQuery('delivery')),
        response: { 200: ListOf(Delivery), ...errors(400, 401, 404, 429) },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      if (!(await store.messages.get(scope, request.params.id))) throw notFound(`message ${request.params.id}`);
      return list(
        await store.deliveries.list(scope, pageOf(request.query), { messageId: request.params.id }),
        deliveryToApi,
      );
    },
  );
};
