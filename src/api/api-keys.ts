import { Type } from 'typebox';
import { widerKeyRefusal, type KeyPower } from '../domain/access.js';
import type { Scope, Store } from '../store/index.js';
import { powerOf } from '../store/organizations.js';
import { HttpError, invalidField, notFound } from './errors.js';
import { scopeOf } from './auth.js';
import { pageOf, type RoutePlugin } from './deps.js';
import { IdParams } from './schemas/common.js';
import { errors } from './schemas/errors.js';
import { ListOf, pageQuery } from './schemas/pagination.js';
import { ApiKey, ApiKeyCreate, ApiKeyWithSecret } from './schemas/api-keys.js';
import { apiKeyToApi, list } from './serialize.js';
import { timeInput } from './shared/time-input.js';
import type { FastifyRequest } from 'fastify';
import type { Static } from 'typebox';

export const apiKeyRoutes: RoutePlugin = async (app, { store }) => {
  app.post(
    '/api/v1/api-keys',
    {
      schema: {
        summary:
          "Create another key for the calling key's organization and environment (shown once), with a role, applications and an expiry within the caller's own",
        tags: ['api-keys'],
        body: ApiKeyCreate,
        response: { 201: ApiKeyWithSecret, ...errors(400, 401, 403, 429) },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request);
      const power = await requestedPower(store, scope, request.body);
      const refusal = widerKeyRefusal(callerPower(request), power);
      if (refusal) throw new HttpError(403, 'forbidden', refusal);
      const issued = await store.organizations.issueKey(scope, request.body.name ?? '', power);
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
        response: { 200: ListOf(ApiKey), ...errors(400, 401, 403, 429) },
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
        response: { 200: ApiKey, ...errors(401, 403, 404) },
      },
    },
    async (request) => {
      const scope = scopeOf(request);
      const target = await store.organizations.getKey(scope, request.params.id);
      if (!target) throw notFound(`API key ${request.params.id}`);
      // A key limited to some applications revokes only keys it could have made.
      const refusal = widerKeyRefusal({ ...callerPower(request), expiresAt: null }, powerOf(target));
      if (refusal) throw new HttpError(403, 'forbidden', refusal);
      const row = await store.organizations.revokeKey(scope, request.params.id);
      if (!row) throw notFound(`API key ${request.params.id}`);
      return apiKeyToApi(row);
    },
  );
};

const callerPower = (request: FastifyRequest): KeyPower => request.caller!.power;

/**
 * The power a create asks for: the role (admin when absent), the applications by id or uid, each of this
 * environment (400 naming the field otherwise), and an expiry in the future.
 */
async function requestedPower(store: Store, scope: Scope, body: Static<typeof ApiKeyCreate>): Promise<KeyPower> {
  const expiresAt = timeInput('body', 'expires_at', body.expires_at) ?? null;
  if (expiresAt !== null && expiresAt <= Date.now())
    throw invalidField(['body', 'expires_at'], 'expires_at must be in the future');
  let appIds: string[] | null = null;
  if (body.app_ids !== undefined) {
    if (body.app_ids.length === 0)
      throw invalidField(
        ['body', 'app_ids'],
        'app_ids must name at least one application (leave it out for every application)',
      );
    appIds = [];
    for (const idOrUid of body.app_ids) {
      const application = await store.applications.get(scope, idOrUid);
      if (!application)
        throw invalidField(['body', 'app_ids'], `app_ids: application ${idOrUid} is not in this environment`);
      if (!appIds.includes(application.id)) appIds.push(application.id);
    }
  }
  return { role: body.role ?? 'admin', appIds, expiresAt };
}
