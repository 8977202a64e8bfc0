import { Type } from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RoutePlugin } from '../api/deps.js';
import { HttpError, invalid, notFound } from '../api/errors.js';
import {
  attemptSummaryToApi,
  attemptToApi,
  backgroundTaskToApi,
  deliveryToApi,
  eventTypeToApi,
  iso,
  list,
  messageToApi,
} from '../api/serialize.js';
import { IdParams, Nullable } from '../api/schemas/common.js';
import { cursorOf } from '../api/schemas/pagination.js';
import { Description, EndpointUrl, EventTypeName, EventTypeNames } from '../api/schemas/fields.js';
import {
  ContentFilter,
  DestinationConfig,
  EndpointAuthInput,
  EndpointHeaders,
  EndpointTlsInput,
  EndpointTypeField,
  FilterTestBody,
  RateLimit,
  RetrySchedule,
  CircuitInput,
  TransformationInput,
  TransformationSimulateBody,
} from '../api/schemas/endpoints.js';
import { StatsQuery } from '../api/schemas/stats.js';
import {
  checkEndpointInput,
  createEndpoint,
  destinationSettings,
  enterpriseSettings,
  transformationSetting,
} from '../api/shared/endpoint-input.js';
import { simulateTransformation } from '../api/shared/transformation-simulate.js';
import { wantsPage } from '../api/root.js';
import { endpointView, withSecret } from '../api/shared/endpoint-view.js';
import { filterTest } from '../api/shared/filter-test.js';
import { messagePayload } from '../api/shared/message-payload.js';
import { startRecovery } from '../api/shared/recovery.js';
import { endpointStats } from '../api/shared/endpoint-stats.js';
import { windowOf } from '../api/shared/stats-window.js';
import type { ApplicationRow } from '../store/schema.js';
import type { Scope, Store } from '../store/index.js';
import { PORTAL_CSS, PORTAL_JS, portalHtml } from './page.js';
import { CHART_JS } from '../console/chart.js';
import { RECEIVER_SETTINGS_JS } from '../console/receiver-settings.js';
import { DESTINATION_SETTINGS_JS } from '../console/destination-settings.js';

// The customer portal: `portal_path` (/portal/<token>) opens a page for one application, and the page calls
// the JSON routes under /portal/<token>/api. The token is the only credential and grants that one
// application: every read and write below is checked against it.

const TOKEN_LENGTH = { minLength: 20, maxLength: 128 };
/**
 * Any token reaches the routes, whatever its length (a path parameter is at most 512 characters): one that
 * cannot be a token is looked up no more than a wrong one and answered the same 404, so a bad link reads
 * one way.
 */
const TokenParams = Type.Object({ token: Type.String() });
const possibleToken = (token: string) =>
  token.length >= TOKEN_LENGTH.minLength && token.length <= TOKEN_LENGTH.maxLength;
/** Endpoints per page of the portal's list (its `cursor` reads the next). */
export const ENDPOINTS_PER_PAGE = 50;
/** Deliveries per page of a message's deliveries in the portal, and attempts shown with each. */
const DELIVERIES_PER_PAGE = 25;
const ATTEMPTS_PER_DELIVERY = 5;
/** Attempts, with the receiver's answers, that one delivery's read carries. */
const ATTEMPTS_WITH_ANSWERS = 20;

const TokenIdParams = Type.Object({ token: TokenParams.properties.token, id: IdParams.properties.id });

interface PortalContext {
  app: ApplicationRow;
  scope: Scope;
}

/** The application a portal token opens, with its organization's plan; null when there is none. */
async function portalContext(
  store: Store,
  token: string,
  requestId: string,
): Promise<(PortalContext & { plan: string }) | null> {
  const app = await store.applications.getByPortalToken(token);
  const org = app && (await store.organizations.get(app.org_id));
  if (!app || !org) return null;
  // What a portal changes is the audit log's, by the portal of its application.
  const actor = { type: 'portal' as const, id: app.id, requestId };
  return { app, scope: { orgId: app.org_id, livemode: Boolean(app.livemode), actor }, plan: org.plan };
}

/** The token must not leak through caches or the Referer header of links the customer follows. */
function privatePage(reply: FastifyReply): void {
  reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer');
}

const publicRoute = { config: { public: true }, schema: { hide: true } } as const;
const PAGE_ROUTE = '/portal/:token';

export const portalRoutes: RoutePlugin = async (app, { store, config, metrics, transformations }) => {
  const view = endpointView(store);
  const contexts = new WeakMap<FastifyRequest, PortalContext | null>();
  // A portal link has a rate limit of its own, at its organization's plan's rate (so a customer cannot use
  // up the organization's API): its context is looked up before the limit is applied (a preHandler) and
  // kept for the handler. Links that open nothing, or could not (the wrong length: not looked up), spend a
  // limit of their caller's address, at the default plan's rate, so tokens cannot be tried freely, on the
  // page as on its routes. The page of a valid link is not counted: a browser would be shown a JSON 429
  // for a page, and the page's own calls to the routes below are counted.
  app.addHook('preValidation', async (request) => {
    const { token } = request.params as { token?: unknown };
    if (typeof token !== 'string') return;
    const ctx = possibleToken(token) ? await portalContext(store, token, request.id) : null;
    contexts.set(request, ctx);
    if (!ctx) request.quota = { bucket: `portal-guess:${request.ip}`, plan: config.defaultPlan };
    else if (request.routeOptions.url !== PAGE_ROUTE)
      request.quota = { bucket: `portal:${ctx.app.id}`, plan: ctx.plan };
  });
  const context = async (request: FastifyRequest): Promise<PortalContext> => {
    const ctx = contexts.get(request);
    if (!ctx) throw new HttpError(404, 'not_found', 'portal not found');
    return ctx;
  };

  /** An endpoint of the portal's application, or 404. */
  async function ownEndpoint(ctx: PortalContext, id: string) {
    const endpoint = await store.endpoints.get(ctx.scope, id);
    if (!endpoint || endpoint.app_id !== ctx.app.id) throw notFound(`endpoint ${id}`);
    return endpoint;
  }

  async function ownDelivery(ctx: PortalContext, id: string) {
    const delivery = await store.deliveries.get(ctx.scope, id);
    if (!delivery || delivery.app_id !== ctx.app.id) throw notFound(`delivery ${id}`);
    return delivery;
  }

  app.get('/portal-assets/portal.js', publicRoute, async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').send(PORTAL_JS),
  );
  app.get('/portal-assets/chart.js', publicRoute, async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').send(CHART_JS),
  );
  app.get('/portal-assets/receiver-settings.js', publicRoute, async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').send(RECEIVER_SETTINGS_JS),
  );
  app.get('/portal-assets/destination-settings.js', publicRoute, async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').send(DESTINATION_SETTINGS_JS),
  );
  app.get('/portal-assets/portal.css', publicRoute, async (_request, reply) =>
    reply.type('text/css; charset=utf-8').send(PORTAL_CSS),
  );

  app.get(PAGE_ROUTE, { ...publicRoute, schema: { hide: true, params: TokenParams } }, async (request, reply) => {
    privatePage(reply);
    reply.header(
      'content-security-policy',
      "default-src 'self'; style-src 'self'; script-src 'self'; frame-ancestors 'none'",
    );
    const found = contexts.get(request);
    reply.header('vary', 'Accept');
    // A browser is shown a page; any other client the error envelope of every route.
    if (!found && !wantsPage(request.headers.accept)) throw new HttpError(404, 'not_found', 'portal not found');
    if (!found)
      return reply
        .code(404)
        .type('text/html; charset=utf-8')
        .send(
          '<!doctype html><title>Not found</title><p>This portal link is not valid: it may have expired or been replaced. Ask for a new link.</p>',
        );
    return reply.type('text/html; charset=utf-8').send(portalHtml(found.app.name));
  });

  app.get(
    '/portal/:token/api/app',
    { ...publicRoute, schema: { hide: true, params: TokenParams } },
    async (request, reply) => {
      privatePage(reply);
      const ctx = await context(request);
      const catalog = await store.eventTypes.list(ctx.scope, { limit: 250 });
      return {
        id: ctx.app.id,
        name: ctx.app.name,
        livemode: ctx.scope.livemode,
        created_at: iso(ctx.app.created_at),
        event_types: catalog.items.map(eventTypeToApi).map(({ name, description }) => ({ name, description })),
      };
    },
  );

  app.get(
    '/portal/:token/api/endpoints',
    {
      ...publicRoute,
      schema: { hide: true, params: TokenParams, querystring: Type.Object({ cursor: cursorOf('endpoint') }) },
    },
    async (request, reply) => {
      privatePage(reply);
      const ctx = await context(request);
      return list(
        await store.endpoints.list(
          ctx.scope,
          { limit: ENDPOINTS_PER_PAGE, cursor: request.query.cursor },
          { appId: ctx.app.id },
        ),
        view,
      );
    },
  );

  app.post(
    '/portal/:token/api/endpoints',
    {
      ...publicRoute,
      schema: {
        hide: true,
        params: TokenParams,
        body: Type.Object({
          url: EndpointUrl,
          description: Type.Optional(Description),
          event_types: Type.Optional(EventTypeNames),
          headers: Type.Optional(EndpointHeaders),
          rate_limit: Type.Optional(Nullable(RateLimit)),
          retry_schedule: Type.Optional(Nullable(RetrySchedule)),
          circuit: Type.Optional(Nullable(CircuitInput)),
          filter: Type.Optional(Nullable(ContentFilter)),
          tls: Type.Optional(Nullable(EndpointTlsInput)),
          auth: Type.Optional(Nullable(EndpointAuthInput)),
          type: Type.Optional(EndpointTypeField),
          config: Type.Optional(Nullable(DestinationConfig)),
          transformation: Type.Optional(Nullable(TransformationInput)),
        }),
      },
    },
    async (request, reply) => {
      privatePage(reply);
      const ctx = await context(request);
      // The customer's receiver is not on the operator's network: public addresses only, in Test too (its
      // token server and its broker too).
      await checkEndpointInput(store, config, ctx.scope, request.body, true);
      const destination = destinationSettings(store, config, ctx.scope, request.body, undefined, true);
      const { tls, auth } = enterpriseSettings(store, config, ctx.scope, request.body, undefined, true);
      const transformation = await transformationSetting(
        transformations,
        request.body.transformation,
        undefined,
        ctx.scope.orgId,
      );
      const { row, secret } = await createEndpoint(store, config, ctx.scope, {
        appId: ctx.app.id,
        url: request.body.url,
        publicOnly: true,
        description: request.body.description,
        eventTypes: request.body.event_types,
        headers: request.body.headers,
        rateLimit: request.body.rate_limit,
        retrySchedule: request.body.retry_schedule,
        circuit: request.body.circuit,
        filter: request.body.filter,
        tls,
        auth,
        destination,
        transformation,
      });
      reply.code(201);
      return withSecret(view(row), secret);
    },
  );

  app.patch(
    '/portal/:token/api/endpoints/:id',
    {
      ...publicRoute,
      schema: {
        hide: true,
        params: TokenIdParams,
        body: Type.Object({
          status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('disabled')])),
          headers: Type.Optional(EndpointHeaders),
          rate_limit: Type.Optional(Nullable(RateLimit)),
          retry_schedule: Type.Optional(Nullable(RetrySchedule)),
          circuit: Type.Optional(Nullable(CircuitInput)),
          filter: Type.Optional(Nullable(ContentFilter)),
          tls: Type.Optional(Nullable(EndpointTlsInput)),
          auth: Type.Optional(Nullable(EndpointAuthInput)),
          // A destination's address and settings; a receiver's URL is chosen once, when it is added.
          url: Type.Optional(EndpointUrl),
          config: Type.Optional(Nullable(DestinationConfig)),
          transformation: Type.Optional(Nullable(TransformationInput)),
        }),
      },
    },
    async (request, reply) => {
      privatePage(reply);
      const ctx = await context(request);
      const current = await ownEndpoint(ctx, request.params.id);
      if (current.type === 'http' && request.body.url !== undefined)
        throw invalid("url: a receiver's URL is fixed here; add an endpoint with the new one");
      await checkEndpointInput(store, config, ctx.scope, { ...request.body, type: current.type }, true);
      const destination = destinationSettings(store, config, ctx.scope, request.body, current, true);
      const { tls, auth } = enterpriseSettings(store, config, ctx.scope, request.body, current, true);
      const transformation = await transformationSetting(
        transformations,
        request.body.transformation,
        current,
        current.id,
      );
      const { status, headers, rate_limit, retry_schedule, circuit, filter } = request.body;
      const row = await store.endpoints.update(ctx.scope, request.params.id, {
        status,
        headers,
        rateLimit: rate_limit,
        retrySchedule: retry_schedule,
        circuit,
        filter,
        tls,
        auth,
        destination: destination?.checked,
        transformation,
      });
      if (!row) throw notFound(`endpoint ${request.params.id}`);
      return view(row);
    },
  );

  // Whether the endpoint's filter, or a draft of one, lets a payload through (the page's "Test filter").
  app.post(
    '/portal/:token/api/endpoints/:id/filter-test',
    { ...publicRoute, schema: { hide: true, params: TokenIdParams, body: FilterTestBody } },
    async (request, reply) => {
      privatePage(reply);
      const ctx = await context(request);
      const endpoint = await ownEndpoint(ctx, request.params.id);
      return filterTest(endpoint.filter, request.body, store.ctx.now(), config.filterBudget);
    },
  );

  // The request the endpoint's transformation, or a draft of it, would make (the page's editor, as the
  // person types): the API's simulate, under the same limits, sending and saving nothing.
  app.post(
    '/portal/:token/api/endpoints/:id/transformation/simulate',
    { ...publicRoute, schema: { hide: true, params: TokenIdParams, body: TransformationSimulateBody } },
    async (request, reply) => {
      privatePage(reply);
      const ctx = await context(request);
      const endpoint = await ownEndpoint(ctx, request.params.id);
      return simulateTransformation(transformations, config, endpoint, request.body, store.ctx.now());
    },
  );

  // The endpoint's attempts per hour, as GET /api/v1/endpoints/{id}/stats answers them: the page's chart.
  app.get(
    '/portal/:token/api/endpoints/:id/stats',
    { ...publicRoute, schema: { hide: true, params: TokenIdParams, querystring: StatsQuery } },
    async (request, reply) => {
      privatePage(reply);
      const ctx = await context(request);
      const window = windowOf(request.query, store.ctx.now());
      const endpoint = await ownEndpoint(ctx, request.params.id);
      return endpointStats(store, endpoint.id, window);
    },
  );

  // A customer recovers what failed while its receiver was down: the same background task as the API's.
  app.post(
    '/portal/:token/api/endpoints/:id/recover',
    {
      ...publicRoute,
      schema: {
        hide: true,
        params: TokenIdParams,
        body: Type.Object({ since: Type.String({ format: 'date-time' }) }),
      },
    },
    async (request, reply) => {
      privatePage(reply);
      const ctx = await context(request);
      const endpoint = await ownEndpoint(ctx, request.params.id);
      reply.code(202);
      return backgroundTaskToApi(await startRecovery(store, ctx.scope, endpoint, request.body));
    },
  );

  app.post(
    '/portal/:token/api/endpoints/:id/rotate-secret',
    { ...publicRoute, schema: { hide: true, params: TokenIdParams } },
    async (request, reply) => {
      privatePage(reply);
      const ctx = await context(request);
      await ownEndpoint(ctx, request.params.id);
      const rotated = await store.endpoints.rotateSecret(ctx.scope, request.params.id, config.secretGraceMs);
      if (!rotated) throw notFound(`endpoint ${request.params.id}`);
      return {
        id: request.params.id,
        ...(rotated.publicKey === null ? { signing_secret: rotated.secret } : { public_key: rotated.publicKey }),
        previous_valid_until: iso(rotated.previousValidUntil),
      };
    },
  );

  app.get(
    '/portal/:token/api/messages',
    {
      ...publicRoute,
      schema: { hide: true, params: TokenParams, querystring: Type.Object({ cursor: cursorOf('message') }) },
    },
    async (request, reply) => {
      privatePage(reply);
      const ctx = await context(request);
      const page = await store.messages.list(
        ctx.scope,
        { limit: 50, cursor: request.query.cursor },
        { appId: ctx.app.id },
      );
      // How each message went at each endpoint, so a failure shows in the list without opening the row.
      const statuses = await store.deliveries.statusesOf(
        ctx.scope,
        page.items.map((message) => message.id),
      );
      return list(page, (message) => ({
        ...messageToApi(message),
        deliveries: statuses
          .filter((delivery) => delivery.message_id === message.id)
          .map(({ endpoint_id, status }) => ({ endpoint_id, status })),
      }));
    },
  );

  // A page of a message's deliveries, each with its latest attempts and no receiver's answers: what one
  // answer carries is bounded (DELIVERIES_PER_PAGE × ATTEMPTS_PER_DELIVERY short summaries), however much
  // a link holder made its receivers answer; `cursor` (the page's next_cursor) reads the next page.
  app.get(
    '/portal/:token/api/messages/:id/deliveries',
    {
      ...publicRoute,
      schema: { hide: true, params: TokenIdParams, querystring: Type.Object({ cursor: cursorOf('delivery') }) },
    },
    async (request, reply) => {
      privatePage(reply);
      const ctx = await context(request);
      const message = await store.messages.get(ctx.scope, request.params.id);
      if (!message || message.app_id !== ctx.app.id) throw notFound(`message ${request.params.id}`);
      const page = await store.deliveries.list(
        ctx.scope,
        { limit: DELIVERIES_PER_PAGE, cursor: request.query.cursor },
        { messageId: message.id },
      );
      const data = await Promise.all(
        page.items.map(async (delivery) => ({
          ...deliveryToApi(delivery),
          attempts: (await store.deliveries.recentAttempts(delivery, ATTEMPTS_PER_DELIVERY)).map(attemptSummaryToApi),
        })),
      );
      return { object: 'list', data, has_more: page.hasMore, next_cursor: page.nextCursor };
    },
  );

  // A message's payload, as its receivers got it in `data`: the page's "Show payload and answers".
  app.get(
    '/portal/:token/api/messages/:id/payload',
    { ...publicRoute, schema: { hide: true, params: TokenIdParams } },
    async (request, reply) => {
      privatePage(reply);
      const ctx = await context(request);
      const message = await store.messages.get(ctx.scope, request.params.id);
      if (!message || message.app_id !== ctx.app.id) throw notFound(`message ${request.params.id}`);
      return messagePayload(store, message);
    },
  );

  // One delivery with its latest attempts and the receiver's answer to each: read on demand, one delivery
  // at a time, so an answer stays bounded (ATTEMPTS_WITH_ANSWERS stored bodies).
  app.get(
    '/portal/:token/api/deliveries/:id',
    { ...publicRoute, schema: { hide: true, params: TokenIdParams } },
    async (request, reply) => {
      privatePage(reply);
      const ctx = await context(request);
      const delivery = await ownDelivery(ctx, request.params.id);
      const attempts = await store.deliveries.recentAttempts(delivery, ATTEMPTS_WITH_ANSWERS);
      return { ...deliveryToApi(delivery), attempts: attempts.map((a) => attemptToApi(a, delivery.message_id)) };
    },
  );

  app.post(
    '/portal/:token/api/deliveries/:id/retry',
    { ...publicRoute, schema: { hide: true, params: TokenIdParams } },
    async (request, reply) => {
      privatePage(reply);
      const ctx = await context(request);
      await ownDelivery(ctx, request.params.id);
      const attemptNumber = await store.deliveries.retry(ctx.scope, request.params.id);
      if (attemptNumber === undefined) throw notFound(`delivery ${request.params.id}`);
      return { delivery_id: request.params.id, status: 'enqueued', attempt_number: attemptNumber };
    },
  );

  app.post(
    '/portal/:token/api/send-test',
    {
      ...publicRoute,
      schema: {
        hide: true,
        params: TokenParams,
        body: Type.Object({ event_type: Type.Optional(EventTypeName) }),
      },
    },
    async (request, reply) => {
      privatePage(reply);
      const ctx = await context(request);
      // A sample event must never reach a live receiver.
      if (ctx.scope.livemode)
        throw new HttpError(403, 'test_mode_only', 'Test events can only be sent from a Test application');
      const eventType = request.body.event_type ?? 'invoice.paid';
      const entry = await store.eventTypes.get(ctx.scope, eventType);
      if (!entry) throw invalid(`event_type "${eventType}" is not in the event catalog`);
      const result = await store.messages.emit({
        scope: ctx.scope,
        appId: ctx.app.id,
        eventType,
        payloadJson: entry.example_json,
        idempotencyKey: null,
      });
      if (!result.ok) throw notFound('application');
      metrics.emitted(ctx.scope.livemode);
      reply.code(202);
      return { id: result.message.id, status: 'accepted', event_type: eventType, delivery_ids: result.deliveryIds };
    },
  );
};
