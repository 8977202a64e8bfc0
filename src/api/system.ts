import '@fastify/swagger';
import { Type } from 'typebox';
import { HttpError } from './errors.js';
import type { RoutePlugin } from './deps.js';
import { errors } from './schemas/errors.js';
import { ApiKeyWithSecret } from './schemas/api-keys.js';
import { bootstrapOrganization } from './shared/bootstrap.js';

const Bootstrap = Type.Object(
  {
    object: Type.Literal('bootstrap'),
    organization: Type.Object({ id: Type.String(), name: Type.String(), plan: Type.String() }),
    test_key: ApiKeyWithSecret,
    live_key: ApiKeyWithSecret,
  },
  {
    examples: [
      {
        object: 'bootstrap',
        organization: { id: 'org_01jd5x3k8m2n4p6q8r0s2t4v6w', name: 'Acme Inc.', plan: 'starter' },
        test_key: {
          id: 'key_01jd5x3k8m2n4p6q8r0s2t4v6w',
          object: 'api_key',
          name: 'Test key',
          prefix: 'sk_test_',
          livemode: false,
          created_at: '2026-01-01T00:00:00.000Z',
          revoked_at: null,
          key: 'sk_test_4eC39HqLyjWDarjtT1zdp7dcQm2nR8xZ',
        },
        live_key: {
          id: 'key_01jd5x3k8m2n4p6q8r0s2t4v6x',
          object: 'api_key',
          name: 'Live key',
          prefix: 'sk_live_',
          livemode: true,
          created_at: '2026-01-01T00:00:00.000Z',
          revoked_at: null,
          key: 'sk_live_9fD27KsPqWmXnB3vT6yH8cJ1rL5eZ0aU',
        },
      },
    ],
  },
);

export const systemRoutes: RoutePlugin = async (app, { store, config }) => {
  app.get(
    '/healthz',
    {
      config: { public: true },
      schema: {
        summary: 'Liveness and database health',
        tags: ['system'],
        response: {
          200: Type.Object({ status: Type.Literal('ok') }, { examples: [{ status: 'ok' }] }),
          ...errors(503),
        },
      },
    },
    async () => {
      if (!(await store.healthy())) throw new HttpError(503, 'service_unavailable', 'The database is unavailable');
      return { status: 'ok' as const };
    },
  );

  app.get(
    '/api/v1/openapi.json',
    {
      config: { public: true },
      schema: {
        summary: 'This API as an OpenAPI 3 document',
        tags: ['system'],
        response: {
          200: Type.Object(
            {},
            {
              additionalProperties: true,
              description: 'The OpenAPI 3 document of this API (also shown as a page at /docs)',
              examples: [{ openapi: '3.0.3', info: { title: 'Herald API', version: '1.0.0' }, paths: {} }],
            },
          ),
        },
      },
    },
    async () => app.swagger(),
  );

  // Development only: in production the route does not exist (404), and operators use the CLI.
  if (config.mode === 'development') {
    app.post(
      '/api/v1/dev/bootstrap',
      {
        config: { public: true },
        schema: {
          summary: 'Development only: create an organization with a Test and a Live key',
          tags: ['system'],
          body: Type.Object(
            { name: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })) },
            { examples: [{ name: 'Acme Inc.' }] },
          ),
          response: { 201: Bootstrap, ...errors(400) },
        },
      },
      async (request, reply) => {
        reply.code(201);
        return bootstrapOrganization(store, request.body.name ?? 'Development organization', config.defaultPlan);
      },
    );
  }
};
