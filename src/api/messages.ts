import { Type } from 'typebox';
import { HttpError, invalid, notFound } from './errors.js';
import { scopeOf } from './auth.js';
import { appIdFilter, createdWithin, pageOf, type RoutePlugin } from './deps.js';
import { IdParams, meaning, withExample } from './schemas/common.js';
import { errors } from './schemas/errors.js';
import { CreatedWithin, cursorOf, Filter, ListOf, pageQuery } from './schemas/pagination.js';
import { EventTypeName, MessageChannels, MessageTags } from './schemas/fields.js';
import { EmitResponse, Message, MessagePayload } from './schemas/messages.js';
import { Delivery } from './schemas/deliveries.js';
import { deliveryToApi, list, messageToApi } from './serialize.js';
import { emit } from './shared/emit.js';
import { messagePayload } from './shared/message-payload.js';
import { deliverAtInput } from './shared/deliver-at.js';

const IdempotencyKey = Type.String({
  minLength: 1,
  maxLength: 255,
  description:
    "Your key for this emit (an order id, say): a repeat with the same key within HERALD_IDEMPOTENCY_TTL (24 h) creates nothing and answers 200 with the first emit's message and delivery_ids. The header wins over the body field",
  examples: ['order-1001'],
});
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
    deliver_at: Type.Optional(
      Type.String({
        format: 'date-time',
        description:
          "Hold the deliveries' first attempts until this time (at most HERALD_MAX_DELIVER_AHEAD ahead, 7d by default); absent or past: at once. Replays and retries go at once",
      }),
    ),
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
      const deliverAt = deliverAtInput('deliver_at', body.deliver_at, store.ctx.now(), deps.config.maxDeliverAheadMs);
      const result = await emit(deps, request, scopeOf(request), body.app_id, body.event_type, body.payload, key, {
        channels: body.channels,
        tags: body.tags,
        deliverAt,
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
