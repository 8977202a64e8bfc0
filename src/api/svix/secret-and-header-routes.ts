import { type TObject, Type } from 'typebox';
import { withExample } from '../schemas/common.js';
import { conflict, invalid } from '../errors.js';
import { scopeOf } from '../auth.js';
import { checkEndpointInput } from '../shared/endpoint-input.js';
import type { Scope, Store } from '../../store/index.js';
import type { EndpointRow } from '../../store/schema.js';
import { suppliedSecretProblem } from '../../domain/secrets.js';
import type { Config } from '../../config.js';
import type { FastifyTypebox } from './common.js';
import { svixErrors } from './errors.js';
import { Headers, SuppliedSecret } from './fields.js';

// The secret and header routes of an endpoint, declared for each place endpoints live: an application's
// (svix/endpoints.ts) and the operational ones (svix/operational-endpoints.ts).

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
        body: withExample(Type.Object({ key: Type.Optional(SuppliedSecret) }), {
          key: 'whsec_4M0nR3xY8qTz2WcVb6KjLp9sHd1FgA5e',
        }),
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
      const { headers, sensitive } = store.endpoints.shownHeaders(endpoint);
      const hidden = new Set(sensitive);
      return {
        headers: Object.fromEntries(Object.entries(headers).filter(([name]) => !hidden.has(name))),
        sensitive,
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
        const kept = Object.entries(store.endpoints.headers(endpoint).headers).filter(
          ([name]) => !gone.has(name.toLowerCase()),
        );
        await setHeaders(scope, endpoint, { ...Object.fromEntries(kept), ...request.body.headers });
        reply.code(204);
        return null;
      },
    );
}
