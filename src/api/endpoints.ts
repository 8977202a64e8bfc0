import { Type } from 'typebox';
import { invalid, notFound } from './errors.js';
import { scopeOf } from './auth.js';
import { appIdFilter, pageOf, type RoutePlugin } from './deps.js';
import { IdParams, Nullable } from './schemas/common.js';
import { errors } from './schemas/errors.js';
import { Filter, ListOf, pageQuery } from './schemas/pagination.js';
import { Description } from './schemas/fields.js';
import {
  CircuitInput,
  ContentFilter,
  DestinationConfig,
  Endpoint,
  EndpointAuthInput,
  EndpointChannels,
  EndpointHeaders,
  EndpointSensitiveHeaders,
  EndpointTlsInput,
  EndpointTypeField,
  EndpointUid,
  EndpointWithSecret,
  FilterTestAnswer,
  FilterTestBody,
  Ordering,
  RateLimit,
  ReceivedEventTypes,
  RetrySchedule,
  ReceiverUrl,
  RotatedSecret,
  SignatureType,
  TransformationInput,
  TransformationSimulateBody,
  TransformationSimulated,
} from './schemas/endpoints.js';
import { iso, list } from './serialize.js';
import {
  checkEndpointInput,
  createEndpoint,
  destinationSettings,
  enterpriseSettings,
  transformationSetting,
  uidChecked,
} from './shared/endpoint-input.js';
import { simulateTransformation } from './shared/transformation-simulate.js';
import { endpointView, withSecret } from './shared/endpoint-view.js';
import { filterTest } from './shared/filter-test.js';

export const endpointRoutes: RoutePlugin = async (app, { store, config, transformations }) => {
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
            url: ReceiverUrl,
            description: Type.Optional(Description),
            event_types: Type.Optional(ReceivedEventTypes),
            headers: Type.Optional(EndpointHeaders),
            sensitive_headers: Type.Optional(EndpointSensitiveHeaders),
            signature_type: Type.Optional(SignatureType),
            rate_limit: Type.Optional(Nullable(RateLimit)),
            retry_schedule: Type.Optional(Nullable(RetrySchedule)),
            circuit: Type.Optional(Nullable(CircuitInput)),
            ordering: Type.Optional(Ordering),
            uid: Type.Optional(EndpointUid),
            channels: Type.Optional(EndpointChannels),
            filter: Type.Optional(Nullable(ContentFilter)),
            tls: Type.Optional(Nullable(EndpointTlsInput)),
            auth: Type.Optional(Nullable(EndpointAuthInput)),
            type: Type.Optional(EndpointTypeField),
            config: Type.Optional(Nullable(DestinationConfig)),
            transformation: Type.Optional(Nullable(TransformationInput)),
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
      const destination = destinationSettings(store, config, scope, body, undefined);
      const { tls, auth } = enterpriseSettings(store, config, scope, body, undefined);
      const transformation = await transformationSetting(transformations, body.transformation, undefined, scope.orgId);
      const application = await store.applications.get(scope, body.app_id);
      if (!application) throw notFound(`application ${body.app_id}`);
      const { row, secret } = await createEndpoint(store, config, scope, {
        appId: application.id,
        url: body.url,
        description: body.description,
        eventTypes: body.event_types,
        headers: body.headers,
        sensitiveHeaders: body.sensitive_headers,
        signatureType: body.signature_type,
        rateLimit: body.rate_limit,
        retrySchedule: body.retry_schedule,
        circuit: body.circuit,
        ordering: body.ordering,
        uid: body.uid,
        channels: body.channels,
        filter: body.filter,
        tls,
        auth,
        destination,
        transformation,
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
            url: Type.Optional(ReceiverUrl),
            description: Type.Optional(Description),
            event_types: Type.Optional(ReceivedEventTypes),
            status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('disabled')])),
            headers: Type.Optional(EndpointHeaders),
            sensitive_headers: Type.Optional(EndpointSensitiveHeaders),
            signature_type: Type.Optional(SignatureType),
            rate_limit: Type.Optional(Nullable(RateLimit)),
            retry_schedule: Type.Optional(Nullable(RetrySchedule)),
            circuit: Type.Optional(Nullable(CircuitInput)),
            ordering: Type.Optional(Ordering),
            uid: Type.Optional(Nullable(EndpointUid)),
            channels: Type.Optional(EndpointChannels),
            filter: Type.Optional(Nullable(ContentFilter)),
            tls: Type.Optional(Nullable(EndpointTlsInput)),
            auth: Type.Optional(Nullable(EndpointAuthInput)),
            type: Type.Optional(EndpointTypeField),
            config: Type.Optional(Nullable(DestinationConfig)),
            transformation: Type.Optional(Nullable(TransformationInput)),
          },
          { examples: [{ event_types: ['invoice.paid', 'invoice.refunded'], rate_limit: 100 }] },
        ),
        response: { 200: Endpoint, ...errors(400, 401, 404, 409, 429) },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      const current = await store.endpoints.get(scope, request.params.id);
      if (!current) throw notFound(`endpoint ${request.params.id}`);
      await checkEndpointInput(store, config, scope, { ...request.body, type: current.type });
      const {
        url,
        description,
        event_types,
        status,
        headers,
        sensitive_headers,
        signature_type,
        rate_limit,
        retry_schedule,
        circuit,
        ordering,
        uid,
        channels,
        filter,
      } = request.body;
      // Receivers verify one kind of signature: a change of kind is a new endpoint, not an update.
      if (signature_type !== undefined)
        throw invalid('signature_type is fixed at creation: create a new endpoint with the other type');
      const destination = destinationSettings(store, config, scope, request.body, current);
      const { tls, auth } = enterpriseSettings(store, config, scope, request.body, current);
      const transformation = await transformationSetting(
        transformations,
        request.body.transformation,
        current,
        current.id,
      );
      const row = await uidChecked(() =>
        store.endpoints.update(scope, request.params.id, {
          // A destination's URL comes checked, without its password, with its settings.
          url: current.type === 'http' ? url : undefined,
          description,
          eventTypes: event_types,
          status,
          headers,
          sensitiveHeaders: sensitive_headers,
          rateLimit: rate_limit,
          retrySchedule: retry_schedule,
          circuit,
          ordering,
          uid,
          channels,
          filter,
          tls,
          auth,
          destination: destination?.checked,
          transformation,
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
      return filterTest(row.filter, request.body, store.ctx.now(), config.filterBudget);
    },
  );

  app.post(
    '/api/v1/endpoints/:id/transformation/simulate',
    {
      schema: {
        summary:
          "The request the endpoint's transformation (or a draft of it) would make for this payload; nothing is sent or saved",
        tags: ['endpoints'],
        params: IdParams,
        body: TransformationSimulateBody,
        response: { 200: TransformationSimulated, ...errors(400, 401, 404, 429) },
      },
    },
    async (request) => {
      const row = await store.endpoints.get(scopeOf(request), request.params.id);
      if (!row) throw notFound(`endpoint ${request.params.id}`);
      return simulateTransformation(transformations, config, row, request.body, store.ctx.now());
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
