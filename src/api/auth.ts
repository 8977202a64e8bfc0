import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Store, Scope } from '../store/index.js';
import type { Config } from '../config.js';
import type { KeyPower } from '../domain/access.js';
import { AuthFailures } from './auth-failures.js';
import { HttpError } from './errors.js';

// Bearer keys: the key decides the organization and the environment (sk_test_ / sk_live_) of the request,
// and its power what the request may do (src/api/access.ts).
export interface Caller {
  keyId: string;
  scope: Scope;
  plan: string;
  power: KeyPower;
}

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | null;
  }
  interface FastifyContextConfig {
    /** Routes that need no API key (health, OpenAPI, dev bootstrap, portal). */
    public?: boolean;
  }
}

/** `Bearer <key>`; the scheme's name is case-insensitive (RFC 9110), and spaces may follow it. */
const BEARER = /^bearer +([A-Za-z0-9_]{1,200})$/i;

export function installAuth(app: FastifyInstance, store: Store, config: Pick<Config, 'authFailureLimit'>): void {
  const failures = new AuthFailures(config.authFailureLimit);
  app.decorateRequest('caller', null);
  app.addHook('onRequest', async (request) => {
    // A path with no route answers 404 without a key, so a missing route (such as the dev bootstrap
    // route in production) reads as missing rather than as "send a key".
    if (request.routeOptions.config.public || request.is404) return;
    const header = request.headers.authorization;
    if (!header)
      throw new HttpError(401, 'unauthorized', 'Missing Authorization header; send Authorization: Bearer <API key>');
    const match = BEARER.exec(header.trim());
    if (!match) throw new HttpError(401, 'unauthorized', 'Malformed Authorization header; expected Bearer <API key>');
    // An address past HERALD_AUTH_FAILURE_LIMIT gets keys looked up only when this process issued or found them lately.
    const limitedMs = failures.limitedFor(request.ip);
    const owner = limitedMs
      ? await store.organizations.findKnownKeyOwner(match[1]!)
      : await store.organizations.findKeyOwner(match[1]!);
    if (!owner && limitedMs)
      throw new HttpError(429, 'rate_limited', 'Too many failed authentications from this address', {
        'retry-after': String(Math.ceil(limitedMs / 1000)),
      });
    if (!owner) {
      failures.fail(request.ip);
      throw new HttpError(401, 'unauthorized', 'Invalid or revoked API key');
    }
    const { expiresAt } = owner.power;
    if (expiresAt !== null && expiresAt <= Date.now())
      throw new HttpError(401, 'unauthorized', `This API key expired at ${new Date(expiresAt).toISOString()}`);
    // The scope carries who asks: each change of configuration is written in the audit log by this key.
    const actor = { type: 'api_key' as const, id: owner.keyId, requestId: request.id };
    request.caller = { ...owner, scope: { ...owner.scope, actor } };
    request.quota = { bucket: `org:${owner.scope.orgId}`, plan: owner.plan };
  });
}

/** The applications the caller's key is limited to (`app_…` ids); null: every application. */
export const keyAppsOf = (request: FastifyRequest): readonly string[] | null => request.caller?.power.appIds ?? null;

/** The caller's scope; routes behind auth always have one. */
export function scopeOf(request: FastifyRequest): Scope {
  if (!request.caller) throw new HttpError(401, 'unauthorized', 'Missing API key');
  return request.caller.scope;
}
