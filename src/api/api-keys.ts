import { Type } from 'typebox';
import { notFound } from './errors.js';
import { scopeOf } from './auth.js';
import { pageOf, type RoutePlugin } from './deps.js';
import { IdParams } from './schemas/common.js';
import { errors } from './schemas/errors.js';
import { ListOf, pageQuery } from './schemas/pagination.js';
import { ApiKey, ApiKeyWithSecret } from './schemas/api-keys.js';
import { apiKeyToApi, list } from './serialize.js';

export const apiKeyRoutes: RoutePlugin = async (app, { store }) => {
  app.post(
    '/api/v1/api-keys',
    {
      schema: {
        summary: "Create another key for the calling key's organization and environment (shown once)",
        tags: ['api-keys'],
        body: Type.Object({ name: Type.Optional(Type.String({ maxLength: 256 })) }, { examples: [{ name: 'CI key' }] }),
        response: { 201: ApiKeyWithSecret, ...errors(400, 401, 429) },
      },
    },
    async (request, reply) => {
      const issued = await store.organizations.issueKey(scopeOf(request), request.body.name ?? '');
      reply.code(201);
      return { ...apiKeyToApi(issued.row), key: issued.key };
    },
  );

  app.get(
    '/api/v1/api-keys',
    {
      schema: {
        summary: 'List keys (never their secret part)',
        tags: ['api-keys'],
        querystring: Type.Object(pageQuery('apiKey')),
        response: { 200: ListOf(ApiKey), ...errors(400, 401, 429) },
      },
    },
    async (request) => list(await store.organizations.listKeys(scopeOf(request), pageOf(request.query)), apiKeyToApi),
  );

  app.delete(
    '/api/v1/api-keys/:id',
    {
      // Never rate limited (installRateLimits): a leaked key keeping the counter full must not stop its revocation.
      config: { rateLimit: false },
      schema: {
        summary: 'Revoke a key; it stops working at once',
        tags: ['api-keys'],
        params: IdParams,
        response: { 200: ApiKey, ...errors(401, 404) },
      },
    },
    async (request) => {
      const row = await store.organizations.revokeKey(scopeOf(request), request.params.id);
      if (!row) throw notFound(`API key ${request.params.id}`);
      return apiKeyToApi(row);
    },
  );
};
