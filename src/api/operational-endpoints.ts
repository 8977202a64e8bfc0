import { Type } from 'typebox';
import { conflict, notFound } from './errors.js';
import { scopeOf } from './auth.js';
import { pageOf, type RoutePlugin } from './deps.js';
import { IdParams } from './schemas/common.js';
import { errors } from './schemas/errors.js';
import { ListOf, pageQuery } from './schemas/pagination.js';
import { Description } from './schemas/fields.js';
import { ReceiverUrl, RotatedSecret } from './schemas/endpoints.js';
import { OperationalEndpoint, OperationalEndpointWithSecret } from './schemas/operational-endpoints.js';
import { checkEndpointInput } from './shared/endpoint-input.js';
import { endpointView, withSecret } from './shared/endpoint-view.js';
import { iso, list } from './serialize.js';
import { MAX_OPERATIONAL_ENDPOINTS, OPERATIONAL_EVENT_TYPES } from '../domain/operational.js';
import { EndpointLimitError } from '../store/endpoints.js';

// Operational endpoints (docs/api.md, "Operational webhooks"): where Herald tells the operator that an
// endpoint was created, updated, deleted or disabled, or that a delivery is failing, exhausted or recovered.
// They are endpoints of the environment's hidden application, so their deliveries are signed, retried and
// read like any other; the endpoint routes and lists never show them.

const OperationalEventTypes = Type.Array(Type.Union(OPERATIONAL_EVENT_TYPES.map((name) => Type.Literal(name))), {
  maxItems: OPERATIONAL_EVENT_TYPES.length,
  uniqueItems: true,
  description: 'Operational events to receive; omitted or empty receives all of them',
});

export const operationalEndpointRoutes: RoutePlugin = async (app, { store, config }) => {
  const view = endpointView(store);

  app.get(
    '/api/v1/operational-endpoints',
    {
      schema: {
        summary: 'List operational endpoints',
        tags: ['operational endpoints'],
        querystring: Type.Object(pageQuery('endpoint')),
        response: { 200: ListOf(OperationalEndpoint), ...errors(400, 401, 429) },
      },
    },
    async (request) =>
      list(await store.endpoints.list(scopeOf(request), pageOf(request.query), { operational: true }), view),
  );

  app.post(
    '/api/v1/operational-endpoints',
    {
      schema: {
        summary: 'Create an operational endpoint (the signing secret is returned once)',
        tags: ['operational endpoints'],
        body: Type.Object(
          {
            url: ReceiverUrl,
            description: Type.Optional(Description),
            event_types: Type.Optional(OperationalEventTypes),
          },
          {
            examples: [
              {
                url: 'https://ops.acme.example/herald',
                description: 'Pager',
                event_types: ['endpoint.disabled', 'message.attempt.exhausted'],
              },
            ],
          },
        ),
        response: { 201: OperationalEndpointWithSecret, ...errors(400, 401, 409, 429) },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const { url, description, event_types } = request.body;
      // The URL rules of the environment's endpoints; the event types were checked by the schema.
      await checkEndpointInput(store, config, scope, { url });
      try {
        const { row, secret } = await store.endpoints.createOperational(
          scope,
          { url, description, eventTypes: event_types },
          MAX_OPERATIONAL_ENDPOINTS,
        );
        reply.code(201);
        return withSecret(view(row), secret);
      } catch (error) {
        if (error instanceof EndpointLimitError)
          throw conflict(
            `this environment has ${MAX_OPERATIONAL_ENDPOINTS} operational endpoints, the most it may have; delete one first`,
          );
        throw error;
      }
    },
  );

  app.patch(
    '/api/v1/operational-endpoints/:id',
    {
      schema: {
        summary: 'Update an operational endpoint; status `active` re-enables one that a 410 or failures disabled',
        tags: ['operational endpoints'],
        params: IdParams,
        body: Type.Object(
          {
            url: Type.Optional(ReceiverUrl),
            description: Type.Optional(Description),
            event_types: Type.Optional(OperationalEventTypes),
            status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('disabled')])),
          },
          { examples: [{ event_types: ['endpoint.disabled', 'message.attempt.failing'], status: 'active' }] },
        ),
        response: { 200: OperationalEndpoint, ...errors(400, 401, 404, 429) },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      const { url, description, event_types, status } = request.body;
      await checkEndpointInput(store, config, scope, { url });
      const row = await store.endpoints.update(
        scope,
        request.params.id,
        { url, description, eventTypes: event_types, status },
        true,
      );
      if (!row) throw notFound(`operational endpoint ${request.params.id}`);
      return view(row);
    },
  );

  app.delete(
    '/api/v1/operational-endpoints/:id',
    {
      schema: {
        summary: 'Delete an operational endpoint',
        tags: ['operational endpoints'],
        params: IdParams,
        response: { 204: Type.Null(), ...errors(401, 404, 429) },
      },
    },
    async (request, reply) => {
      if (!(await store.endpoints.delete(scopeOf(request), request.params.id, true)))
        throw notFound(`operational endpoint ${request.params.id}`);
      reply.code(204);
      return null;
    },
  );

  app.post(
    '/api/v1/operational-endpoints/:id/rotate-secret',
    {
      schema: {
        summary: 'Rotate the signing secret; the previous one also signs until previous_valid_until',
        tags: ['operational endpoints'],
        params: IdParams,
        response: { 200: RotatedSecret, ...errors(401, 404, 429) },
      },
    },
    async (request) => {
      const rotated = await store.endpoints.rotateSecret(
        scopeOf(request),
        request.params.id,
        config.secretGraceMs,
        undefined,
        true,
      );
      if (!rotated) throw notFound(`operational endpoint ${request.params.id}`);
      return {
        id: request.params.id,
        ...(rotated.publicKey === null ? { signing_secret: rotated.secret } : { public_key: rotated.publicKey }),
        previous_valid_until: iso(rotated.previousValidUntil),
      };
    },
  );
};
