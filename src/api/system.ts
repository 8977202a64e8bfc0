import '@fastify/swagger';
import { Type } from 'typebox';
import { HttpError } from './errors.js';
import type { RoutePlugin } from './deps.js';
import { ApiKeyWithSecret, errors } from './schemas.js';
import { apiKeyToApi } from './serialize.js';
import type { Store } from '../store/index.js';

/** A new organization with one Test and one Live key: what the dev bootstrap route and the CLI issue. */
export async function bootstrapOrganization(store: Store, name: string, plan: string) {
  const organization = await store.organizations.create(name, plan);
  const testKey = await store.organizations.issueKey({ orgId: organization.id, livemode: false }, 'bootstrap test key');
  const liveKey = await store.organizations.issueKey({ orgId: organization.id, livemode: true }, 'bootstrap live key');
  return {
    object: 'bootstrap' as const,
    organization: { id: organization.id, name: organization.name, plan: organization.plan },
    test_key: { ...apiKeyToApi(testKey.row), key: testKey.key },
    live_key: { ...apiKeyToApi(liveKey.row), key: liveKey.key },
  };
}

const Bootstrap = Type.Object({
  object: Type.Literal('bootstrap'),
  organization: Type.Object({ id: Type.String(), name: Type.String(), plan: Type.String() }),
  test_key: ApiKeyWithSecret,
  live_key: ApiKeyWithSecret,
});

export const systemRoutes: RoutePlugin = async (app, { store, config }) => {
  app.get(
    '/healthz',
    {
      config: { public: true },
      schema: {
        summary: 'Liveness and database health',
        tags: ['system'],
        response: { 200: Type.Object({ status: Type.Literal('ok') }), ...errors(503) },
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
        response: { 200: Type.Object({}, { additionalProperties: true, description: 'An OpenAPI 3.0 document' }) },
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
          body: Type.Object({ name: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })) }),
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
