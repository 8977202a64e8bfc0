import { type TObject, Type } from 'typebox';
import { withExample } from '../schemas.js';
import { conflict, invalid, notFound } from '../errors.js';
import { scopeOf } from '../auth.js';
import type { RoutePlugin } from '../deps.js';
import type { FastifyTypebox } from './common.js';
import { checkEndpointInput, createEndpoint, uidChecked } from '../endpoints.js';
import { startRecovery } from '../background-tasks.js';
import type { Scope, Store } from '../../store/index.js';
import type { EndpointRow } from '../../store/schema.js';
import { ID_PREFIX } from '../../domain/ids.js';
import { suppliedSecretProblem } from '../../domain/secrets.js';
import { isSensitiveHeader } from '../../domain/headers.js';
import type { Config } from '../../config.js';
import { AppParams, appOf, EndpointParams, endpointOf, listQuery, orderQuery, pageOf } from './common.js';
import { svixErrors } from './errors.js';
import { Channel } from './messages.js';
import { EndpointOut, endpointOut, MessageOut, messageOut, SvixListOf, svixList } from './models.js';

const DAY_MS = 86_400_000;
/** The span Svix's endpoint stats count when `since` is not given. */
const STATS_DEFAULT_MS = 28 * DAY_MS;

const Metadata = Type.Record(Type.String(), Type.String({ maxLength: 1024 }), { maxProperties: 50 });
export const Headers = Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.String());
const Uid = Type.String({ minLength: 1, maxLength: 256, pattern: '^[a-zA-Z0-9\\-_.]+$' });
export const optional = {
  description: Type.Optional(Type.String({ maxLength: 1024 })),
  disabled: Type.Optional(Type.Boolean()),
  filterTypes: Type.Optional(
    Type.Union([
      Type.Array(Type.String({ minLength: 1, maxLength: 255 }), { maxItems: 256, uniqueItems: true }),
      Type.Null(),
    ]),
  ),
  channels: Type.Optional(
    Type.Union([Type.Array(Channel, { minItems: 1, maxItems: 10, uniqueItems: true }), Type.Null()]),
  ),
  metadata: Type.Optional(Metadata),
  rateLimit: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 100_000 }), Type.Null()])),
  uid: Type.Optional(Type.Union([Uid, Type.Null()])),
  version: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  /** A Herald extension: a content filter (docs/api.md, "Content filters"). */
  filter: Type.Optional(Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()])),
};
export const Url = Type.String({ minLength: 1, maxLength: 2048 });
const EndpointIn = Type.Object({
  url: Url,
  ...optional,
  secret: Type.Optional(Type.Union([Type.String({ maxLength: 256 }), Type.Null()])),
  headers: Type.Optional(Type.Union([Headers, Type.Null()])),
});
const EndpointUpdate = Type.Object({ url: Url, ...optional });
const EndpointPatch = Type.Object({
  url: Type.Optional(Url),
  ...optional,
  secret: Type.Optional(Type.Union([Type.String({ maxLength: 256 }), Type.Null()])),
});

export interface Fields {
  url?: string | undefined;
  description?: string | undefined;
  disabled?: boolean | undefined;
  filterTypes?: string[] | null | undefined;
  channels?: string[] | null | undefined;
  filter?: object | null | undefined;
  metadata?: Record<string, string> | undefined;
  rateLimit?: number | null | undefined;
  uid?: string | null | undefined;
  secret?: string | null | undefined;
  headers?: Record<string, string> | null | undefined;
}

/**
 * Checks what Herald checks on the native surface, plus what only Svix's bodies carry. `eventTypes`:
 * what filterTypes may name (the catalog's, unless given).
 */
export async function checked(
  store: Store,
  config: Config,
  scope: Scope,
  body: Fields,
  eventTypes?: readonly string[],
): Promise<void> {
  if (body.uid?.startsWith(ID_PREFIX.endpoint))
    throw invalid(`uid must not start with ${ID_PREFIX.endpoint}: it would read as an endpoint id`);
  if (body.secret != null) {
    const problem = suppliedSecretProblem(body.secret);
    if (problem) throw invalid(problem);
  }
  const unknown = eventTypes && (body.filterTypes ?? []).filter((name) => !eventTypes.includes(name));
  if (unknown && unknown.length > 0) throw invalid(`filterTypes must be among: ${eventTypes!.join(', ')}`);
  await checkEndpointInput(store, config, scope, {
    url: body.url,
    event_types: eventTypes ? undefined : (body.filterTypes ?? undefined),
    headers: body.headers ?? undefined,
    filter: body.filter,
  });
}

/**
 * A PUT's fields: every one left out takes its default (no description, every event type, no channels or
 * filter, no limit, enabled, no metadata), but uid, which stays unless given (the path may name it).
 */
export function replacing(body: Fields & { url: string }): Fields {
  return {
    url: body.url,
    description: body.description ?? '',
    disabled: body.disabled ?? false,
    filterTypes: body.filterTypes ?? null,
    metadata: body.metadata ?? {},
    channels: body.channels ?? null,
    filter: body.filter ?? null,
    rateLimit: body.rateLimit ?? null,
    uid: body.uid,
  };
}

/** Writes Svix's fields onto an endpoint; a field left out stays as it is. Signed with svix-* names from now. */
export async function update(store: Store, scope: Scope, endpoint: EndpointRow, body: Fields, graceMs: number) {
  const operational = endpoint.operational === 1;
  const row = await uidChecked(() =>
    store.endpoints.update(
      scope,
      endpoint.id,
      {
        url: body.url,
        description: body.description,
        eventTypes: body.filterTypes === undefined ? undefined : (body.filterTypes ?? []),
        status: body.disabled === undefined ? undefined : body.disabled ? 'disabled' : 'active',
        rateLimit: body.rateLimit,
        uid: body.uid,
        channels: body.channels,
        filter: body.filter,
        metadata: body.metadata,
        svixHeaders: true,
      },
      operational,
    ),
  );
  if (!row) throw notFound(`endpoint ${endpoint.id}`);
  if (body.secret != null) await store.endpoints.rotateSecret(scope, row.id, graceMs, body.secret, operational);
  return row;
}

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
      const page = await store.endpoints.list(scope, pageOf(request.query, 'asc'), { appId: application.id });
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
      const until = request.query.until === undefined ? store.ctx.now() : Date.parse(request.query.until);
      const since = request.query.since === undefined ? until - STATS_DEFAULT_MS : Date.parse(request.query.since);
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
  const taskOut = (task: { id: string; status: string; kind: string; updated_at: number }) => ({
    id: task.id,
    status: task.status,
    task: task.kind,
    updatedAt: new Date(task.updated_at).toISOString(),
  });
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
      const since = Math.max(0, Date.parse(request.body.since));
      const until = request.body.until == null ? null : Date.parse(request.body.until);
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
    '/api/v1/app/:app_id/endpoint/:endpoint_id/send-example',
    {
      schema: {
        summary: "Send the event type's example to this endpoint only",
        tags,
        params: EndpointParams,
        body: withExample(
          Type.Object({
            eventType: Type.String({ minLength: 1, maxLength: 255 }),
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

/** Where secret and header routes find their endpoint: an application's, or an operational one. */
export interface EndpointLocation {
  prefix: string;
  params: TObject;
  tags: string[];
  find: (scope: Scope, params: Record<string, string>) => Promise<EndpointRow>;
  /** Also PATCH …/headers (application endpoints have it, operational ones do not). */
  patchHeaders: boolean;
}

/** GET …/secret, POST …/secret/rotate, GET and PUT (and PATCH) …/headers of the endpoints `where` finds. */
export function secretAndHeaderRoutes(app: FastifyTypebox, store: Store, config: Config, where: EndpointLocation) {
  const tags = where.tags;
  app.get(
    `${where.prefix}/secret`,
    {
      schema: {
        summary: "The endpoint's current signing secret",
        tags,
        params: where.params,
        response: {
          200: withExample(Type.Object({ key: Type.String() }), { key: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }),
          ...svixErrors(404, 409),
        },
      },
    },
    async (request) => {
      const endpoint = await where.find(scopeOf(request), request.params as Record<string, string>);
      if (endpoint.signature_type !== 'hmac')
        throw conflict('this endpoint signs with Ed25519: its public key is public_key on GET /api/v1/endpoints/{id}');
      return { key: store.endpoints.currentSecret(endpoint) };
    },
  );

  app.post(
    `${where.prefix}/secret/rotate`,
    {
      schema: {
        summary: 'Rotate the signing secret (to `key` when given); the previous one signs during the grace period',
        tags,
        params: where.params,
        body: withExample(
          Type.Object({ key: Type.Optional(Type.Union([Type.String({ maxLength: 256 }), Type.Null()])) }),
          { key: 'whsec_4M0nR3xY8qTz2WcVb6KjLp9sHd1FgA5e' },
        ),
        response: { 204: Type.Null(), ...svixErrors(404, 409) },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const { key } = request.body;
      if (key != null) {
        const problem = suppliedSecretProblem(key);
        if (problem) throw invalid(problem);
      }
      const endpoint = await where.find(scope, request.params as Record<string, string>);
      if (key != null && endpoint.signature_type !== 'hmac')
        throw conflict('this endpoint signs with Ed25519: it cannot take a whsec_ key');
      await store.endpoints.rotateSecret(
        scope,
        endpoint.id,
        config.secretGraceMs,
        key ?? undefined,
        endpoint.operational === 1,
      );
      reply.code(204);
      return null;
    },
  );

  const HeadersOut = withExample(Type.Object({ headers: Headers, sensitive: Type.Array(Type.String()) }), {
    headers: { 'X-Tenant': 'acme' },
    sensitive: ['Authorization'],
  });
  app.get(
    `${where.prefix}/headers`,
    {
      schema: {
        summary: "The endpoint's own headers; sensitive ones are named, not shown",
        tags,
        params: where.params,
        response: { 200: HeadersOut, ...svixErrors(404) },
      },
    },
    async (request) => {
      const endpoint = await where.find(scopeOf(request), request.params as Record<string, string>);
      const all = Object.entries(store.endpoints.shownHeaders(endpoint));
      return {
        headers: Object.fromEntries(all.filter(([name]) => !isSensitiveHeader(name))),
        sensitive: all.filter(([name]) => isSensitiveHeader(name)).map(([name]) => name),
      };
    },
  );

  const setHeaders = async (scope: Scope, endpoint: EndpointRow, headers: Record<string, string>) => {
    await checkEndpointInput(store, config, scope, { headers });
    await store.endpoints.update(scope, endpoint.id, { headers, svixHeaders: true }, endpoint.operational === 1);
  };

  app.put(
    `${where.prefix}/headers`,
    {
      schema: {
        summary: "Replace the endpoint's own headers",
        tags,
        params: where.params,
        body: withExample(Type.Object({ headers: Headers }), { headers: { 'X-Tenant': 'acme' } }),
        response: { 204: Type.Null(), ...svixErrors(404) },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const endpoint = await where.find(scope, request.params as Record<string, string>);
      await setHeaders(scope, endpoint, request.body.headers);
      reply.code(204);
      return null;
    },
  );

  if (where.patchHeaders)
    app.patch(
      `${where.prefix}/headers`,
      {
        schema: {
          summary: "Set some of the endpoint's headers and delete others (`deleteHeaders`)",
          tags,
          params: where.params,
          body: withExample(
            Type.Object({
              headers: Headers,
              deleteHeaders: Type.Optional(Type.Array(Type.String({ maxLength: 256 }), { maxItems: 100 })),
            }),
            { headers: { 'X-Region': 'eu' }, deleteHeaders: ['X-Legacy'] },
          ),
          response: { 204: Type.Null(), ...svixErrors(404) },
        },
      },
      async (request, reply) => {
        const scope = scopeOf(request);
        const endpoint = await where.find(scope, request.params as Record<string, string>);
        const gone = new Set(
          [...(request.body.deleteHeaders ?? []), ...Object.keys(request.body.headers)].map((n) => n.toLowerCase()),
        );
        const kept = Object.entries(store.endpoints.headers(endpoint)).filter(
          ([name]) => !gone.has(name.toLowerCase()),
        );
        await setHeaders(scope, endpoint, { ...Object.fromEntries(kept), ...request.body.headers });
        reply.code(204);
        return null;
      },
    );
}
