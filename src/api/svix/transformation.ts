import { Type } from 'typebox';
import { scopeOf } from '../auth.js';
import type { RoutePlugin } from '../deps.js';
import { invalid, notFound } from '../errors.js';
import { transformationToApi } from '../serialize.js';
import { transformationSetting } from '../shared/endpoint-input.js';
import { TRANSFORMATION_CODE_LIMIT } from '../../domain/transformations.js';
import { EndpointParams, endpointOf } from './common.js';
import { svixErrors } from './errors.js';

// An endpoint's transformation on the Svix-compatible surface, as the svix SDK calls it
// (`endpoint.transformationGet`, `endpoint.patchTransformation`, `endpoint.transformationPartialUpdate`).

const TransformationOut = Type.Object(
  {
    code: Type.Union([Type.String(), Type.Null()]),
    enabled: Type.Boolean(),
    updatedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  },
  { examples: [{ code: 'function handler(webhook) { return webhook; }', enabled: true, updatedAt: null }] },
);

const TransformationPatch = Type.Object(
  {
    code: Type.Optional(Type.Union([Type.String({ maxLength: TRANSFORMATION_CODE_LIMIT }), Type.Null()])),
    enabled: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
    // The SDK's model carries `variables`; Herald's transformations take none.
    variables: Type.Optional(Type.Unknown()),
  },
  { examples: [{ code: 'function handler(webhook) { return webhook; }', enabled: true }] },
);

export const svixTransformationRoutes: RoutePlugin = async (app, { store, transformations }) => {
  const tags = ['svix: endpoint'];
  const path = '/api/v1/app/:app_id/endpoint/:endpoint_id/transformation';

  app.get(
    path,
    {
      schema: {
        summary: "The endpoint's transformation (code null and enabled false: none)",
        tags,
        params: EndpointParams,
        response: { 200: TransformationOut, ...svixErrors(404) },
      },
    },
    async (request) => {
      const { endpoint } = await endpointOf(store, scopeOf(request), request.params.app_id, request.params.endpoint_id);
      const shown = transformationToApi(endpoint);
      return { code: shown?.code ?? null, enabled: shown?.enabled ?? false, updatedAt: shown?.updated_at ?? null };
    },
  );

  app.patch(
    path,
    {
      schema: {
        summary: "Change the endpoint's transformation (a field left out keeps its value)",
        tags,
        params: EndpointParams,
        body: TransformationPatch,
        response: { 204: Type.Null(), ...svixErrors(404) },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const { endpoint } = await endpointOf(store, scope, request.params.app_id, request.params.endpoint_id);
      const { code, enabled, variables } = request.body;
      if (variables !== undefined && variables !== null && Object.keys(variables as object).length > 0)
        throw invalid('variables: transformations take no variables here');
      const transformation = await transformationSetting(
        transformations,
        { code, enabled: enabled ?? undefined },
        endpoint,
        endpoint.id,
      );
      const row = await store.endpoints.update(scope, endpoint.id, { transformation });
      if (!row) throw notFound(`endpoint ${request.params.endpoint_id}`);
      reply.code(204);
      return null;
    },
  );
};
