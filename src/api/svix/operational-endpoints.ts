import { Type } from 'typebox';
import { withExample } from '../schemas/common.js';
import { conflict, notFound } from '../errors.js';
import { scopeOf } from '../auth.js';
import type { RoutePlugin } from '../deps.js';
import { MAX_OPERATIONAL_ENDPOINTS, OPERATIONAL_EVENT_TYPES } from '../../domain/operational.js';
import { EndpointLimitError } from '../../store/endpoints.js';
import type { Scope } from '../../store/index.js';
import { listQuery, orderQuery, pageOf } from './common.js';
import { svixErrors } from './errors.js';
import { checked, optional, replacing, update } from './endpoint-input.js';
import { SuppliedSecret } from './fields.js';
import { secretAndHeaderRoutes } from './secret-and-header-routes.js';
import { uidChecked } from '../shared/endpoint-input.js';
import { EndpointUrl } from '../schemas/fields.js';
import { EndpointOut, endpointOut, SvixListOf, svixList } from './models.js';

// Operational webhooks (Herald's own events: an endpoint created, disabled, a delivery failing, …) as
// Svix's operational webhook endpoints: the native operational endpoints, in Svix's shapes. Their
// filterTypes are the operational event types, which both name alike.

const { channels: _channels, filter: _filter, ...fields } = optional;
const OperationalIn = Type.Object({
  url: EndpointUrl,
  ...fields,
  secret: Type.Optional(SuppliedSecret),
});
const OperationalUpdate = Type.Object({ url: EndpointUrl, ...fields });
const Params = Type.Object({ endpoint_id: Type.String({ minLength: 1, maxLength: 256 }) });

export const svixOperationalEndpointRoutes: RoutePlugin = async (app, { store, config }) => {
  const tags = ['svix: operational webhook endpoint'];
  const find = async (scope: Scope, id: string) => {
    const endpoint = await store.endpoints.find(scope, null, id);
    if (!endpoint) throw notFound(`operational webhook endpoint ${id}`);
    return endpoint;
  };

  app.get(
    '/api/v1/operational-webhook/endpoint',
    {
      schema: {
        summary: 'List operational webhook endpoints',
        tags,
        querystring: Type.Object({ ...listQuery, ...orderQuery }),
        response: { 200: SvixListOf(EndpointOut), ...svixErrors() },
      },
    },
    async (request) =>
      svixList(
        await store.endpoints.list(scopeOf(request), pageOf(request.query, 'asc'), { operational: true }),
        endpointOut,
      ),
  );

  app.post(
    '/api/v1/operational-webhook/endpoint',
    {
      schema: {
        summary: "Create an operational webhook endpoint (Herald's own events)",
        tags,
        body: withExample(OperationalIn, {
          url: 'https://ops.acme.example/herald',
          description: 'Pager',
          filterTypes: ['endpoint.disabled', 'message.attempt.exhausted'],
        }),
        response: { 201: EndpointOut, ...svixErrors(409) },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const body = request.body;
      await checked(store, config, scope, body, OPERATIONAL_EVENT_TYPES);
      try {
        const { row } = await uidChecked(() =>
          store.endpoints.createOperational(
            scope,
            {
              url: body.url,
              description: body.description,
              eventTypes: body.filterTypes ?? undefined,
              rateLimit: body.rateLimit,
              uid: body.uid,
              metadata: body.metadata,
              secret: body.secret ?? undefined,
              svixHeaders: true,
            },
            MAX_OPERATIONAL_ENDPOINTS,
          ),
        );
        const created = body.disabled ? await update(store, scope, row, { disabled: true }, config.secretGraceMs) : row;
        reply.code(201);
        return endpointOut(created);
      } catch (error) {
        if (error instanceof EndpointLimitError)
          throw conflict(
            `this environment has ${MAX_OPERATIONAL_ENDPOINTS} operational endpoints, the most it may have`,
          );
        throw error;
      }
    },
  );

  app.get(
    '/api/v1/operational-webhook/endpoint/:endpoint_id',
    {
      schema: {
        summary: 'Get an operational webhook endpoint by id or uid',
        tags,
        params: Params,
        response: { 200: EndpointOut, ...svixErrors(404) },
      },
    },
    async (request) => endpointOut(await find(scopeOf(request), request.params.endpoint_id)),
  );

  app.put(
    '/api/v1/operational-webhook/endpoint/:endpoint_id',
    {
      schema: {
        summary: 'Update an operational webhook endpoint: fields left out take their defaults',
        tags,
        params: Params,
        body: withExample(OperationalUpdate, {
          url: 'https://ops.acme.example/herald',
          filterTypes: ['endpoint.disabled'],
        }),
        response: { 200: EndpointOut, ...svixErrors(404, 409) },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      const body = request.body;
      await checked(store, config, scope, body, OPERATIONAL_EVENT_TYPES);
      const endpoint = await find(scope, request.params.endpoint_id);
      const row = await update(store, scope, endpoint, replacing(body), config.secretGraceMs);
      return endpointOut(row);
    },
  );

  app.delete(
    '/api/v1/operational-webhook/endpoint/:endpoint_id',
    {
      schema: {
        summary: 'Delete an operational webhook endpoint',
        tags,
        params: Params,
        response: { 204: Type.Null(), ...svixErrors(404) },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const endpoint = await find(scope, request.params.endpoint_id);
      if (!(await store.endpoints.delete(scope, endpoint.id, true)))
        throw notFound(`operational webhook endpoint ${request.params.endpoint_id}`);
      reply.code(204);
      return null;
    },
  );

  secretAndHeaderRoutes(app, store, config, {
    prefix: '/api/v1/operational-webhook/endpoint/:endpoint_id',
    params: Params,
    tags,
    find: (scope, params) => find(scope, params.endpoint_id!),
    patchHeaders: false,
  });
};
