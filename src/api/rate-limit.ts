import type { FastifyInstance } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import type { Redis } from 'ioredis';
import type { Config } from '../config.js';
import { HttpError } from './errors.js';

/**
 * Which counter a request spends, at which plan's rate: an organization's keys share one; each portal
 * link has its own at its organization's rate (a customer holding a link cannot use up the organization's
 * API); links that open nothing spend their caller address's.
 */
export interface Quota {
  bucket: string;
  plan: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set before the limit is applied (preHandler): by auth from the key, by the portal from its token. */
    quota: Quota | null;
  }
}

/**
 * Request limits by plan, counted per second (Quota says which counter). Revoking a key is never limited:
 * a leaked key that keeps its organization's counter full must not stop its own revocation. With HERALD_REDIS_URL the counters are
 * shared by every API process; without it each process counts on its own.
 */
export async function installRateLimits(app: FastifyInstance, config: Config): Promise<Redis | null> {
  // ioredis is loaded only where it is used: most processes count on their own and need none of it.
  const redis = config.redisUrl
    ? new (await import('ioredis')).Redis(config.redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false })
    : null;
  // Without an offline queue, commands sent before the connection is up fail (and skipOnError lets those
  // requests through uncounted): wait briefly for it, but never refuse to start because Redis is away.
  if (redis) {
    // ioredis reconnects by itself and reports every failed try; without a listener it prints each one to
    // stderr. One log line per outage instead.
    let down = false;
    redis.on('error', (error) => {
      if (down) return;
      down = true;
      app.log.warn({ err: error }, 'Redis unreachable: requests are not counted against rate limits until it is back');
    });
    redis.on('ready', () => {
      if (!down) return;
      down = false;
      app.log.info('Redis reachable again: rate limits count again');
    });
    await waitForReady(redis, 3_000);
  }
  // Requests per second for a plan; null is no limit (the `unlimited` plan). A plan an organization holds
  // that the configuration does not list falls back to the default plan. (Not `??`: it would skip past
  // unlimited's null.)
  const limitOf = (plan: string | undefined): number | null => {
    if (plan === undefined) return null;
    return (Object.hasOwn(config.plans, plan) ? config.plans[plan] : config.plans[config.defaultPlan]) ?? null;
  };
  app.decorateRequest('quota', null);
  await app.register(rateLimit, {
    global: true,
    hook: 'preHandler',
    timeWindow: 1000,
    ...(redis ? { redis, nameSpace: config.redisPrefix } : {}),
    // A counter store that is down must not take the API down with it.
    skipOnError: true,
    keyGenerator: (request) => request.quota?.bucket ?? request.ip,
    allowList: (request) => request.quota === null || limitOf(request.quota.plan) === null,
    max: (request) => limitOf(request.quota?.plan) ?? Number.MAX_SAFE_INTEGER,
    errorResponseBuilder: () => new HttpError(429, 'rate_limited', 'Too many requests'),
  });
  return redis;
}

async function waitForReady(redis: Redis, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      redis.off('ready', done);
      resolve();
    };
    const timer = setTimeout(done, timeoutMs);
    redis.once('ready', done);
  });
}
