import { Type } from 'typebox';
import { withExample } from '../schemas/common.js';
import { invalid } from '../errors.js';
import { ID_PREFIX } from '../../domain/ids.js';
import { scopeOf } from '../auth.js';
import type { RoutePlugin } from '../deps.js';
import { emit } from '../shared/emit.js';
import { timeInput } from '../shared/time-input.js';
import { deliverAtInput } from '../shared/deliver-at.js';
import { EventTypeName, MessageChannels, MessageTags, NAME_PATTERN } from '../schemas/fields.js';
import { AppParams, appOf, listQuery, MAX_PAGE_WITH_CONTENT, MessageParams, messageOf, pageOf } from './common.js';
import { ApplicationIn, createApplication } from './application-input.js';
import { svixErrors } from './errors.js';
import { emitKeyOf } from './idempotency.js';
import { MessageOut, messageOut, SvixListOf, svixList } from './models.js';

const WithContent = Type.Optional(Type.Boolean({ description: 'Include payloads (default true)' }));
const MessageIn = Type.Object({
  eventType: EventTypeName,
  payload: Type.Object({}, { additionalProperties: true }),
  eventId: Type.Optional(
    Type.Union([Type.String({ minLength: 1, maxLength: 256, pattern: NAME_PATTERN }), Type.Null()]),
  ),
  channels: Type.Optional(Type.Union([MessageChannels, Type.Null()])),
  tags: Type.Optional(Type.Union([MessageTags, Type.Null()])),
  application: Type.Optional(Type.Union([ApplicationIn, Type.Null()])),
  deliverAt: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  payloadRetentionPeriod: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 90 }), Type.Null()])),
  payloadRetentionHours: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 2160 }), Type.Null()])),
});

const HOUR_MS = 3_600_000;

export const svixMessageRoutes: RoutePlugin = async (app, deps) => {
  const { store } = deps;
  const tags = ['svix: message'];
  app.get(
    '/api/v1/app/:app_id/msg',
    {
      schema: {
        summary: "List an application's messages, newest first",
        tags,
        params: AppParams,
        querystring: Type.Object({
          ...listQuery,
          event_types: Type.Optional(
            Type.String({ maxLength: 4096, description: 'Event type names, comma-separated' }),
          ),
          before: Type.Optional(Type.String({ format: 'date-time' })),
          after: Type.Optional(Type.String({ format: 'date-time' })),
          with_content: WithContent,
          channel: Type.Optional(Type.String({ maxLength: 128 })),
          tag: Type.Optional(Type.String({ maxLength: 128 })),
        }),
        response: { 200: SvixListOf(MessageOut), ...svixErrors(404) },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      const { query } = request;
      const application = await appOf(store, scope, request.params.app_id);
      const content = query.with_content !== false;
      const page = pageOf(query);
      if (content) page.limit = Math.min(page.limit, MAX_PAGE_WITH_CONTENT);
      const messages = await store.messages.list(scope, page, {
        appId: application.id,
        eventTypes: query.event_types?.split(',').filter(Boolean),
        channel: query.channel,
        tag: query.tag,
        before: timeInput('query', 'before', query.before),
        after: timeInput('query', 'after', query.after),
      });
      const payloads = content ? await store.messages.readablePayloads(messages.items.map((m) => m.id)) : new Map();
      return svixList(messages, (m) => messageOut(m, payloads.get(m.id)));
    },
  );

  app.post(
    '/api/v1/app/:app_id/msg',
    {
      config: { messageAnswer: true },
      schema: {
        summary: 'Send a message to every subscribed endpoint of the application',
        tags,
        params: AppParams,
        querystring: Type.Object({ with_content: WithContent }),
        headers: Type.Object({
          'idempotency-key': Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: 255,
              description:
                'Your key for this request: a repeat with the same key within HERALD_IDEMPOTENCY_TTL (24 h) answers the first answer again and creates nothing',
              examples: ['order-1001'],
            }),
          ),
        }),
        body: withExample(MessageIn, {
          eventType: 'invoice.paid',
          eventId: 'evt-invoice-1001',
          payload: { invoice_id: 'inv_1001', amount: 4200, currency: 'usd' },
          tags: ['region-eu'],
        }),
        response: { 202: MessageOut, ...svixErrors(404, 409) },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const body = request.body;
      // {msg_id} takes a message id or an eventId: an eventId that looks like an id would make that ambiguous.
      if (body.eventId?.startsWith(ID_PREFIX.message))
        throw invalid(`eventId must not start with ${ID_PREFIX.message}: it would read as a message id`);
      // `application` creates the application when the path names none (its uid is the path's when not given).
      if (body.application && !(await store.applications.get(scope, request.params.app_id)))
        await createApplication(store, scope, {
          ...body.application,
          uid: body.application.uid ?? request.params.app_id,
        });
      const deliverAt = deliverAtInput('deliverAt', body.deliverAt, store.ctx.now(), deps.config.maxDeliverAheadMs);
      const sent = request.headers['idempotency-key'];
      const key = sent ? emitKeyOf(request.params.app_id, sent) : null;
      // A shorter payload retention (hours win over days, as in Svix): the payload goes then, once no
      // attempt of it waits.
      const retentionHours = body.payloadRetentionHours ?? (body.payloadRetentionPeriod ?? 0) * 24;
      const result = await emit(deps, request, scope, request.params.app_id, body.eventType, body.payload, key, {
        eventId: body.eventId,
        channels: body.channels,
        tags: body.tags,
        payloadExpiresAt: retentionHours > 0 ? store.ctx.now() + retentionHours * HOUR_MS : null,
        deliverAt,
      });
      reply.code(202);
      // A repeat of an earlier emit's key shows that message's payload, as a read would.
      const payload =
        request.query.with_content === false
          ? undefined
          : result.idempotent
            ? await store.messages.readablePayload(result.message.id)
            : JSON.stringify(body.payload);
      return messageOut(result.message, payload);
    },
  );

  app.get(
    '/api/v1/app/:app_id/msg/:msg_id',
    {
      schema: {
        summary: 'Get a message, with its payload unless with_content=false',
        tags,
        params: MessageParams,
        querystring: Type.Object({ with_content: WithContent }),
        response: { 200: MessageOut, ...svixErrors(404) },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      const message = await messageOf(store, scope, request.params.app_id, request.params.msg_id);
      const payload =
        request.query.with_content === false ? undefined : await store.messages.readablePayload(message.id);
      return messageOut(message, payload);
    },
  );

  app.delete(
    '/api/v1/app/:app_id/msg/:msg_id/content',
    {
      schema: {
        summary: "Delete a message's payload now; attempts not yet made fail as past retention",
        tags,
        params: MessageParams,
        response: { 204: Type.Null(), ...svixErrors(404) },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const message = await messageOf(store, scope, request.params.app_id, request.params.msg_id);
      await store.messages.expungePayload(scope, message.id);
      reply.code(204);
      return null;
    },
  );
};
