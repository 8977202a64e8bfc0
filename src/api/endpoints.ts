import { Type } from 'typebox';
import { conflict, invalid, notFound } from './errors.js';
import { scopeOf } from './auth.js';
import { appIdFilter, pageOf, type RoutePlugin } from './deps.js';
import {
  Endpoint,
  ContentFilter,
  EndpointChannels,
  EndpointAuthInput,
  EndpointHeaders,
  EndpointTlsInput,
  EndpointUid,
  EndpointWithSecret,
  errors,
  Filter,
  IdParams,
  ListOf,
  Nullable,
  Ordering,
  pageQuery,
  RateLimit,
  SignatureType,
  Timestamp,
} from './schemas.js';
import { endpointToApi, iso, list } from './serialize.js';
import { endpointUrlProblem } from '../domain/urls.js';
import { headersProblem, REDACTED } from '../domain/headers.js';
import { checkedTls, type TlsInput, type TlsSettings } from '../domain/pem.js';
import { type AuthInput, checkedAuth } from '../domain/endpoint-auth.js';
import { filterProblem, filterTester } from '../domain/content-filter.js';
import { outboundEnvelope } from '../domain/envelope.js';
import type { Scope, Store } from '../store/index.js';
import { type EndpointAuth, EndpointLimitError, EndpointUidTakenError } from '../store/endpoints.js';
import type { EndpointRow } from '../store/schema.js';
import type { Config } from '../config.js';

const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'Receiver URL; https in Live mode' });
const Description = Type.String({ maxLength: 1024 });
const EventTypes = Type.Array(Type.String({ minLength: 1, maxLength: 255 }), {
  maxItems: 256,
  uniqueItems: true,
  description: 'Event types to receive; omitted or empty receives every event type',
});

/**
 * Checks the URL and the subscribed event types against the rules of the caller's environment;
 * `publicOnly` for a URL a portal customer chose (endpointUrlProblem).
 */
export async function checkEndpointInput(
  store: Store,
  config: Config,
  scope: Scope,
  input: {
    url?: string | undefined;
    event_types?: string[] | undefined;
    headers?: Record<string, string> | undefined;
    filter?: object | null | undefined;
  },
  publicOnly = scope.livemode,
) {
  if (input.headers !== undefined) {
    const problem = headersProblem(input.headers);
    if (problem) throw invalid(problem);
  }
  if (input.filter != null) {
    const problem = filterProblem(input.filter);
    if (problem) throw invalid(problem);
  }
  if (input.url !== undefined) {
    const problem = endpointUrlProblem(input.url, scope.livemode, config.ssrfAllow, publicOnly, config.testNetwork);
    if (problem) throw invalid(problem);
  }
  if (input.event_types && input.event_types.length > 0) {
    const unknown = await store.eventTypes.unknownNames(scope, input.event_types);
    if (unknown.length > 0) throw invalid(`event_types not in this environment's event catalog: ${unknown.join(', ')}`);
  }
}

export const FilterTestBody = Type.Object(
  {
    payload: Type.Object({}, { additionalProperties: true, description: 'The payload, as `data`' }),
    event_type: Type.Optional(Type.String({ maxLength: 255, description: 'As `type` (default empty)' })),
    // A draft filter to try instead of the endpoint's own (null: none); nothing is saved.
    filter: Type.Optional(Nullable(ContentFilter)),
  },
  {
    examples: [
      {
        event_type: 'invoice.paid',
        payload: { invoice_id: 'inv_1001', amount: 4200 },
        filter: { 'data.amount': { $gte: 1000 } },
      },
    ],
  },
);

export const FilterTestAnswer = Type.Object(
  { matches: Type.Boolean({ description: 'true also when there is no filter' }) },
  { examples: [{ matches: true }] },
);

/**
 * The filter-test routes' verdict (native and portal): whether `stored`, or the draft `body.filter` when
 * one is given, lets a message with this payload and event type through, as fan-out would decide.
 */
export function filterTest(
  stored: string | null,
  body: { payload: object; event_type?: string | undefined; filter?: object | null | undefined },
  now: number,
): { matches: boolean } {
  if (body.filter != null) {
    const problem = filterProblem(body.filter);
    if (problem) throw invalid(problem);
  }
  const filter = body.filter === undefined ? stored : body.filter === null ? null : JSON.stringify(body.filter);
  const envelope = outboundEnvelope(body.event_type ?? '', now, JSON.stringify(body.payload));
  return { matches: filter === null || filterTester(filter)(envelope) };
}

/**
 * An endpoint's `tls` and `auth` as given on create or update, checked (400 naming the field) and ready to
 * store: undefined when not given, null to remove. A client key or secret sent back as "<redacted>"
 * stands for the one `current` keeps. The token URL is judged as the endpoint URL is (endpointUrlProblem).
 */
export function enterpriseSettings(
  store: Store,
  config: Config,
  scope: Scope,
  input: { tls?: TlsInput | null | undefined; auth?: AuthInput | null | undefined },
  current: EndpointRow | undefined,
  publicOnly = scope.livemode,
): { tls?: TlsSettings | null; auth?: EndpointAuth | null } {
  const settings: { tls?: TlsSettings | null; auth?: EndpointAuth | null } = {};
  if (input.tls !== undefined) {
    if (input.tls === null) settings.tls = null;
    else {
      const checked = checkedTls(input.tls, current ? store.endpoints.tlsKey(current) : null);
      if (typeof checked === 'string') throw invalid(checked);
      settings.tls = checked;
    }
  }
  if (input.auth !== undefined) {
    if (input.auth === null) settings.auth = null;
    else {
      const checked = checkedAuth(
        input.auth,
        (url) => endpointUrlProblem(url, scope.livemode, config.ssrfAllow, publicOnly, config.testNetwork),
        current ? store.endpoints.authSecret(current) : null,
      );
      if (typeof checked === 'string') throw invalid(checked);
      settings.auth = checked;
    }
  }
  return settings;
}

/** An endpoint as the API and the portal show it: its headers opened, sensitive values redacted. */
export function endpointView(store: Store): (row: EndpointRow) => ReturnType<typeof endpointToApi> {
  return (row) => endpointToApi(row, store.endpoints.shownHeaders(row));
}

/**
 * A created endpoint with its secret, shown once: an HMAC endpoint's whsec_ secret. An Ed25519 endpoint's
 * private key is never shown; its public_key is on every read.
 */
export function withSecret<T extends { public_key: string | null }>(endpoint: T, secret: string) {
  return endpoint.public_key === null ? { ...endpoint, signing_secret: secret } : endpoint;
}

/**
 * Creates an endpoint within HERALD_MAX_ENDPOINTS_PER_APP: one more is 409 `conflict` naming the limit,
 * and so is a uid its application has already.
 */
export async function createEndpoint(
  store: Store,
  config: Config,
  scope: Scope,
  input: Parameters<Store['endpoints']['create']>[1],
): Promise<{ row: EndpointRow; secret: string }> {
  try {
    return await uidChecked(() => store.endpoints.create(scope, input, config.maxEndpointsPerApp));
  } catch (error) {
    if (error instanceof EndpointLimitError) throw conflict(error.message);
    throw error;
  }
}

/** Runs an endpoint write and turns a uid its application has already into 409 `conflict`. */
export async function uidChecked<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (error instanceof EndpointUidTakenError) throw conflict(error.message);
    throw error;
  }
}

/** The answer of a secret rotation: the new secret (or public key) and until when the previous one signs. */
export const RotatedSecret = Type.Object(
  {
    id: Type.String(),
    signing_secret: Type.Optional(Type.String({ description: 'hmac endpoints: the new whsec_ secret' })),
    public_key: Type.Optional(Type.String({ description: 'ed25519 endpoints: the new whpk_ public key' })),
    previous_valid_until: Timestamp,
  },
  {
    examples: [
      {
        id: 'ep_01jd5x3k8m2n4p6q8r0s2t4v6w',
        signing_secret: 'whsec_4M0nR3xY8qTz2WcVb6KjLp9sHd1FgA5e',
        previous_valid_until: '2026-01-02T00:00:00.000Z',
      },
    ],
  },
);

export const endpointRoutes: RoutePlugin = async (app, { store, config }) => {
  const view = endpointView(store);
  app.get(
    '/api/v1/endpoints',
    {
      schema: {
        summary: 'List endpoints',
        tags: ['endpoints'],
        querystring: Type.Object({ ...pageQuery('endpoint'), app_id: Filter }),
        response: { 200: ListOf(Endpoint), ...errors(400, 401, 429) },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      const appId = await appIdFilter(store, scope, request.query.app_id);
      return list(await store.endpoints.list(scope, pageOf(request.query), { appId }), view);
    },
  );

  app.post(
    '/api/v1/endpoints',
    {
      schema: {
        summary: 'Create an endpoint (the signing secret is returned once)',
        tags: ['endpoints'],
        body: Type.Object(
          {
            app_id: Type.String({ minLength: 1, maxLength: 256 }),
            url: Url,
            description: Type.Optional(Description),
            event_types: Type.Optional(EventTypes),
            headers: Type.Optional(EndpointHeaders),
            signature_type: Type.Optional(SignatureType),
            rate_limit: Type.Optional(Nullable(RateLimit)),
            ordering: Type.Optional(Ordering),
            uid: Type.Optional(EndpointUid),
            channels: Type.Optional(EndpointChannels),
            filter: Type.Optional(Nullable(ContentFilter)),
            tls: Type.Optional(Nullable(EndpointTlsInput)),
            auth: Type.Optional(Nullable(EndpointAuthInput)),
          },
          {
            examples: [
              {
                app_id: 'acme',
                url: 'https://acme.example/webhooks',
                description: 'Billing receiver',
                event_types: ['invoice.paid'],
                headers: { 'X-Tenant': 'acme' },
                rate_limit: 50,
                uid: 'billing',
              },
            ],
          },
        ),
        response: { 201: EndpointWithSecret, ...errors(400, 401, 404, 409, 429) },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const body = request.body;
      await checkEndpointInput(store, config, scope, body);
      const { tls, auth } = enterpriseSettings(store, config, scope, body, undefined);
      const application = await store.applications.get(scope, body.app_id);
      if (!application) throw notFound(`application ${body.app_id}`);
      const { row, secret } = await createEndpoint(store, config, scope, {
        appId: application.id,
        url: body.url,
        description: body.description,
        eventTypes: body.event_types,
        headers: body.headers,
        signatureType: body.signature_type,
        rateLimit: body.rate_limit,
        ordering: body.ordering,
        uid: body.uid,
        channels: body.channels,
        filter: body.filter,
        tls,
        auth,
      });
      reply.code(201);
      return withSecret(view(row), secret);
    },
  );

  app.get(
    '/api/v1/endpoints/:id',
    {
      schema: {
        summary: 'Get an endpoint',
        tags: ['endpoints'],
        params: IdParams,
        response: { 200: Endpoint, ...errors(401, 404, 429) },
      },
    },
    async (request) => {
      const row = await store.endpoints.get(scopeOf(request), request.params.id);
      if (!row) throw notFound(`endpoint ${request.params.id}`);
      return view(row);
    },
  );

  app.patch(
    '/api/v1/endpoints/:id',
    {
      schema: {
        summary: 'Update an endpoint; status `disabled` stops deliveries, `active` re-enables',
        tags: ['endpoints'],
        params: IdParams,
        body: Type.Object(
          {
            url: Type.Optional(Url),
            description: Type.Optional(Description),
            event_types: Type.Optional(EventTypes),
            status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('disabled')])),
            headers: Type.Optional(EndpointHeaders),
            signature_type: Type.Optional(SignatureType),
            rate_limit: Type.Optional(Nullable(RateLimit)),
            ordering: Type.Optional(Ordering),
            uid: Type.Optional(Nullable(EndpointUid)),
            channels: Type.Optional(EndpointChannels),
            filter: Type.Optional(Nullable(ContentFilter)),
            tls: Type.Optional(Nullable(EndpointTlsInput)),
            auth: Type.Optional(Nullable(EndpointAuthInput)),
          },
          { examples: [{ event_types: ['invoice.paid', 'invoice.refunded'], rate_limit: 100 }] },
        ),
        response: { 200: Endpoint, ...errors(400, 401, 404, 409, 429) },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      await checkEndpointInput(store, config, scope, request.body);
      const {
        url,
        description,
        event_types,
        status,
        headers,
        signature_type,
        rate_limit,
        ordering,
        uid,
        channels,
        filter,
      } = request.body;
      // Receivers verify one kind of signature: a change of kind is a new endpoint, not an update.
      if (signature_type !== undefined)
        throw invalid('signature_type is fixed at creation: create a new endpoint with the other type');
      // The stored key or secret is read only when a "<redacted>" stands for it.
      const keeps = request.body.tls?.client_key === REDACTED || request.body.auth?.client_secret === REDACTED;
      const current = keeps ? await store.endpoints.get(scope, request.params.id) : undefined;
      if (keeps && !current) throw notFound(`endpoint ${request.params.id}`);
      const { tls, auth } = enterpriseSettings(store, config, scope, request.body, current);
      const row = await uidChecked(() =>
        store.endpoints.update(scope, request.params.id, {
          url,
          description,
          eventTypes: event_types,
          status,
          headers,
          rateLimit: rate_limit,
          ordering,
          uid,
          channels,
          filter,
          tls,
          auth,
        }),
      );
      if (!row) throw notFound(`endpoint ${request.params.id}`);
      return view(row);
    },
  );

  app.delete(
    '/api/v1/endpoints/:id',
    {
      schema: {
        summary: 'Delete an endpoint',
        tags: ['endpoints'],
        params: IdParams,
        response: { 204: Type.Null(), ...errors(401, 404, 429) },
      },
    },
    async (request, reply) => {
      if (!(await store.endpoints.delete(scopeOf(request), request.params.id)))
        throw notFound(`endpoint ${request.params.id}`);
      reply.code(204);
      return null;
    },
  );

  app.post(
    '/api/v1/endpoints/:id/filter-test',
    {
      schema: {
        summary: "Whether the endpoint's content filter (or a draft of one) lets a message with this payload through",
        tags: ['endpoints'],
        params: IdParams,
        body: FilterTestBody,
        response: { 200: FilterTestAnswer, ...errors(400, 401, 404, 429) },
      },
    },
    async (request) => {
      const row = await store.endpoints.get(scopeOf(request), request.params.id);
      if (!row) throw notFound(`endpoint ${request.params.id}`);
      return filterTest(row.filter, request.body, store.ctx.now());
    },
  );

  app.post(
    '/api/v1/endpoints/:id/rotate-secret',
    {
      schema: {
        summary: 'Rotate the signing secret; the previous one also signs until previous_valid_until',
        tags: ['endpoints'],
        params: IdParams,
        response: {
          200: RotatedSecret,
          ...errors(401, 404, 429),
        },
      },
    },
    async (request) => {
      const rotated = await store.endpoints.rotateSecret(scopeOf(request), request.params.id, config.secretGraceMs);
      if (!rotated) throw notFound(`endpoint ${request.params.id}`);
      return {
        id: request.params.id,
        ...(rotated.publicKey === null ? { signing_secret: rotated.secret } : { public_key: rotated.publicKey }),
        previous_valid_until: iso(rotated.previousValidUntil),
      };
    },
  );
};
