import { Type } from 'typebox';
import { withExample } from '../schemas/common.js';
import { EndpointUrl, EventTypeName } from '../schemas/fields.js';
import { conflict, invalid, invalidField, notFound } from '../errors.js';
import { scopeOf } from '../auth.js';
import type { RoutePlugin } from '../deps.js';
import { createEndpoint } from '../shared/endpoint-input.js';
import { startRecovery } from '../shared/recovery.js';
import { startBulkReplay } from '../shared/bulk-replay.js';
import type { BulkReplayStatus, StatusCodeClass } from '../../store/background-tasks.js';
import type { BackgroundTaskRow } from '../../store/schema.js';
import { timeInput } from '../shared/time-input.js';
import { AppParams, appOf, EndpointParams, endpointOf, listQuery, orderQuery, pageOf } from './common.js';
import { checked, optional, replacing, update } from './endpoint-input.js';
import { svixErrors } from './errors.js';
import { Headers, SuppliedSecret } from './fields.js';
import { backgroundTaskOut, EndpointOut, endpointOut, MessageOut, messageOut, SvixListOf, svixList } from './models.js';
import { secretAndHeaderRoutes } from './secret-and-header-routes.js';

const DAY_MS = 86_400_000;
/** The span Svix's endpoint stats count when `since` is not given. */
const STATS_DEFAULT_MS = 28 * DAY_MS;

const EndpointIn = Type.Object({
  url: EndpointUrl,
  ...optional,
  secret: Type.Optional(SuppliedSecret),
  headers: Type.Optional(Type.Union([Headers, Type.Null()])),
});
const EndpointUpdate = Type.Object({ url: EndpointUrl, ...optional });
const EndpointPatch = Type.Object({
  url: Type.Optional(EndpointUrl),
  ...optional,
  secret: Type.Optional(SuppliedSecret),
});

/** Svix's message statuses a bulk replay may filter by, as Herald's delivery statuses. */
const SVIX_STATUS: Record<number, BulkReplayStatus | undefined> = { 0: 'success', 2: 'failed' };
const SVIX_STATUS_TEXT = 'Svix MessageStatus: 0 success, 2 fail (1 pending, 3 sending and 4 canceled are refused)';

export const svixEndpointRoutes: RoutePlugin = async (app, { store, config }) => {
  const tags = ['svix: endpoint'];
  app.get(
    '/api/v1/app/:app_id/endpoint',
    {
      schema: {
        summary: "List an application's endpoints",
        tags,
        params: AppParams,
        querystring: Type.Object({ ...listQuery, ...orderQuery }),
        response: { 200: SvixListOf(EndpointOut), ...svixErrors(404) },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      const application = await appOf(store, scope, request.params.app_id);
      const page = await store.endpoints.list(scope, pageOf(request.query, 'asc'), {
        appId: application.id,
        httpOnly: true,
      });
      return svixList(page, endpointOut);
    },
  );

  app.post(
    '/api/v1/app/:app_id/endpoint',
    {
      schema: {
        summary: 'Create an endpoint (signed with both the svix-* and the webhook-* header names)',
        tags,
        params: AppParams,
        body: withExample(EndpointIn, {
          url: 'https://acme.example/webhooks',
          description: 'Billing receiver',
          filterTypes: ['invoice.paid'],
          rateLimit: 50,
          uid: 'billing',
          metadata: { team: 'billing' },
        }),
        response: { 201: EndpointOut, ...svixErrors(404, 409) },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const body = request.body;
      await checked(store, config, scope, body);
      const application = await appOf(store, scope, request.params.app_id);
      const { row } = await createEndpoint(store, config, scope, {
        appId: application.id,
        url: body.url,
        description: body.description,
        eventTypes: body.filterTypes ?? undefined,
        headers: body.headers ?? undefined,
        rateLimit: body.rateLimit,
        uid: body.uid,
        channels: body.channels,
        filter: body.filter,
        metadata: body.metadata,
        secret: body.secret ?? undefined,
        svixHeaders: true,
      });
      const created = body.disabled ? await update(store, scope, row, { disabled: true }, config.secretGraceMs) : row;
      reply.code(201);
      return endpointOut(created);
    },
  );

  app.get(
    '/api/v1/app/:app_id/endpoint/:endpoint_id',
    {
      schema: {
        summary: 'Get an endpoint by id or uid',
        tags,
        params: EndpointParams,
        response: { 200: EndpointOut, ...svixErrors(404) },
      },
    },
    async (request) => {
      const { endpoint } = await endpointOf(store, scopeOf(request), request.params.app_id, request.params.endpoint_id);
      return endpointOut(endpoint);
    },
  );

  // PUT sets every field (replacing).
  app.put(
    '/api/v1/app/:app_id/endpoint/:endpoint_id',
    {
      schema: {
        summary: 'Update an endpoint: fields left out take their defaults',
        tags,
        params: EndpointParams,
        body: withExample(EndpointUpdate, {
          url: 'https://acme.example/webhooks',
          description: 'Billing receiver',
          filterTypes: ['invoice.paid'],
          rateLimit: 50,
          uid: 'billing',
          metadata: { team: 'billing' },
        }),
        response: { 200: EndpointOut, ...svixErrors(404, 409) },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      const body = request.body;
      await checked(store, config, scope, body);
      const { endpoint } = await endpointOf(store, scope, request.params.app_id, request.params.endpoint_id);
      const row = await update(store, scope, endpoint, replacing(body), config.secretGraceMs);
      return endpointOut(row);
    },
  );

  app.patch(
    '/api/v1/app/:app_id/endpoint/:endpoint_id',
    {
      schema: {
        summary: 'Change some fields of an endpoint (a `secret` rotates to it)',
        tags,
        params: EndpointParams,
        body: withExample(EndpointPatch, { rateLimit: 100, disabled: false }),
        response: { 200: EndpointOut, ...svixErrors(404, 409) },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      await checked(store, config, scope, request.body);
      const { endpoint } = await endpointOf(store, scope, request.params.app_id, request.params.endpoint_id);
      return endpointOut(await update(store, scope, endpoint, request.body, config.secretGraceMs));
    },
  );

  app.delete(
    '/api/v1/app/:app_id/endpoint/:endpoint_id',
    {
      schema: {
        summary: 'Delete an endpoint',
        tags,
        params: EndpointParams,
        response: { 204: Type.Null(), ...svixErrors(404) },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const { endpoint } = await endpointOf(store, scope, request.params.app_id, request.params.endpoint_id);
      if (!(await store.endpoints.delete(scope, endpoint.id))) throw notFound(`endpoint ${request.params.endpoint_id}`);
      reply.code(204);
      return null;
    },
  );

  secretAndHeaderRoutes(app, store, config, {
    prefix: '/api/v1/app/:app_id/endpoint/:endpoint_id',
    params: EndpointParams,
    tags,
    find: async (scope, params) => (await endpointOf(store, scope, params.app_id!, params.endpoint_id!)).endpoint,
    patchHeaders: true,
  });

  app.get(
    '/api/v1/app/:app_id/endpoint/:endpoint_id/stats',
    {
      schema: {
        summary: "The endpoint's messages by state, made in [since, until) (default: the last 28 days)",
        tags,
        params: EndpointParams,
        querystring: Type.Object({
          since: Type.Optional(Type.String({ format: 'date-time' })),
          until: Type.Optional(Type.String({ format: 'date-time' })),
        }),
        response: {
          200: withExample(
            Type.Object({
              success: Type.Integer(),
              pending: Type.Integer(),
              sending: Type.Integer(),
              fail: Type.Integer(),
              canceled: Type.Integer(),
            }),
            { success: 1180, pending: 3, sending: 0, fail: 12, canceled: 0 },
          ),
          ...svixErrors(404),
        },
      },
    },
    async (request) => {
      const { endpoint } = await endpointOf(store, scopeOf(request), request.params.app_id, request.params.endpoint_id);
      const until = timeInput('query', 'until', request.query.until) ?? store.ctx.now();
      const since = timeInput('query', 'since', request.query.since) ?? until - STATS_DEFAULT_MS;
      const counts = await store.deliveries.countsByStatus(endpoint.id, since, until);
      // A delivery whose attempt is under way is `pending` in Herald; `disabled` ones wait on their endpoint.
      return {
        success: counts.get('success') ?? 0,
        pending: counts.get('pending') ?? 0,
        sending: 0,
        fail: counts.get('failed') ?? 0,
        canceled: counts.get('disabled') ?? 0,
      };
    },
  );

  const TaskOut = withExample(
    Type.Object({
      id: Type.String(),
      status: Type.String(),
      task: Type.String(),
      updatedAt: Type.String({ format: 'date-time' }),
    }),
    {
      id: 'task_01jd5x3k8m2n4p6q8r0s2t4v6w',
      status: 'running',
      task: 'endpoint.replay',
      updatedAt: '2026-01-01T00:00:00.000Z',
    },
  );
  const taskOut = (task: BackgroundTaskRow) => {
    const { id, status, task: kind, updatedAt } = backgroundTaskOut(task);
    return { id, status, task: kind, updatedAt };
  };
  const Range = Type.Object({
    since: Type.String({ format: 'date-time' }),
    until: Type.Optional(Type.Union([Type.String({ format: 'date-time' }), Type.Null()])),
  });

  app.post(
    '/api/v1/app/:app_id/endpoint/:endpoint_id/replay-missing',
    {
      schema: {
        summary: "Send the endpoint, in the background, the application's messages since `since` that it never got",
        tags,
        params: EndpointParams,
        body: withExample(Range, { since: '2026-01-01T00:00:00.000Z' }),
        response: { 202: TaskOut, ...svixErrors(404, 409) },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const { endpoint } = await endpointOf(store, scope, request.params.app_id, request.params.endpoint_id);
      const since = Math.max(0, timeInput('body', 'since', request.body.since)!);
      const until = timeInput('body', 'until', request.body.until) ?? null;
      if (until !== null && until <= since) throw invalid('until must be after since');
      if (endpoint.status === 'disabled') throw conflict('the endpoint is disabled: enable it before replaying to it');
      // One replay of an endpoint runs at a time; asked again meanwhile, the running one answers.
      const { task, created } = await store.backgroundTasks.startReplay(scope, {
        endpointId: endpoint.id,
        since,
        until,
      });
      if (created) store.events.emit('background');
      reply.code(202);
      return taskOut(task);
    },
  );

  app.post(
    '/api/v1/app/:app_id/endpoint/:endpoint_id/bulk-replay',
    {
      schema: {
        summary:
          "Give each of the endpoint's deliveries of messages since `since` (until `until`) that match the filters one new attempt",
        tags,
        params: EndpointParams,
        body: withExample(
          Type.Object({
            ...Range.properties,
            eventTypes: Type.Optional(Type.Union([Type.Array(EventTypeName, { maxItems: 100 }), Type.Null()])),
            status: Type.Optional(
              Type.Union([Type.Integer({ minimum: 0, maximum: 4, description: SVIX_STATUS_TEXT }), Type.Null()]),
            ),
            statusCodeClass: Type.Optional(
              Type.Union([
                Type.Integer({ enum: [0, 100, 200, 300, 400, 500], description: '0: no answer; 100 … 500: 1xx … 5xx' }),
                Type.Null(),
              ]),
            ),
            channel: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 128 }), Type.Null()])),
            tag: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 128 }), Type.Null()])),
          }),
          { since: '2026-01-01T00:00:00.000Z', statusCodeClass: 500 },
        ),
        response: { 202: TaskOut, ...svixErrors(404, 409) },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const { endpoint } = await endpointOf(store, scope, request.params.app_id, request.params.endpoint_id);
      const { body } = request;
      const status = body.status == null ? null : SVIX_STATUS[body.status];
      if (status === undefined)
        throw invalidField(
          ['body', 'status'],
          'status: only 0 (success) and 2 (fail) name deliveries that can be replayed; a pending or sending one has its attempt coming',
        );
      const code = body.statusCodeClass;
      const task = await startBulkReplay(store, scope, endpoint, {
        since: body.since,
        until: body.until,
        eventTypes: body.eventTypes,
        status,
        statusCodeClass: code == null ? null : code === 0 ? 'none' : (`${code / 100}xx` as StatusCodeClass),
        channel: body.channel,
        tag: body.tag,
      });
      reply.code(202);
      return taskOut(task);
    },
  );

  app.post(
    '/api/v1/app/:app_id/endpoint/:endpoint_id/send-example',
    {
      config: { messageAnswer: true },
      schema: {
        summary: "Send the event type's example to this endpoint only",
        tags,
        params: EndpointParams,
        body: withExample(
          Type.Object({
            eventType: EventTypeName,
            exampleIndex: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
          }),
          { eventType: 'invoice.paid', exampleIndex: 0 },
        ),
        response: { 202: MessageOut, ...svixErrors(404, 409) },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const { eventType, exampleIndex = 0 } = request.body;
      const { endpoint } = await endpointOf(store, scope, request.params.app_id, request.params.endpoint_id);
      if (endpoint.status === 'disabled') throw conflict('the endpoint is disabled: enable it to send it an example');
      const entry = await store.eventTypes.get(scope, eventType);
      if (!entry) throw notFound(`event type ${eventType}`);
      // The schema's examples (Svix's), else the catalog entry's example for the first.
      const examples = (entry.schema_json === null ? undefined : JSON.parse(entry.schema_json))?.examples;
      const example =
        Array.isArray(examples) && examples.length > 0
          ? examples[exampleIndex]
          : exampleIndex === 0
            ? JSON.parse(entry.example_json)
            : undefined;
      if (example === undefined || example === null || typeof example !== 'object' || Array.isArray(example))
        throw invalid(`event type ${eventType} has no example object at index ${exampleIndex}`);
      const payloadJson = JSON.stringify(example);
      const message = await store.messages.sendTo(scope, endpoint, eventType, payloadJson);
      reply.code(202);
      return messageOut(message, payloadJson);
    },
  );

  app.post(
    '/api/v1/app/:app_id/endpoint/:endpoint_id/recover',
    {
      schema: {
        summary: 'Give every failed delivery of messages since `since` (until `until`) one more attempt',
        tags,
        params: EndpointParams,
        body: withExample(
          Type.Object({
            since: Type.String({ format: 'date-time' }),
            until: Type.Optional(Type.Union([Type.String({ format: 'date-time' }), Type.Null()])),
          }),
          { since: '2026-01-01T00:00:00.000Z', until: '2026-01-01T06:00:00.000Z' },
        ),
        response: {
          202: TaskOut,
          ...svixErrors(404, 409),
        },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const { endpoint } = await endpointOf(store, scope, request.params.app_id, request.params.endpoint_id);
      const task = await startRecovery(store, scope, endpoint, {
        since: request.body.since,
        until: request.body.until ?? undefined,
      });
      reply.code(202);
      return { id: task.id, status: task.status, task: task.kind, updatedAt: new Date(task.updated_at).toISOString() };
    },
  );
};
