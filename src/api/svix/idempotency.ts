import type { FastifyInstance } from 'fastify';
import { conflict, invalid } from '../errors.js';
import type { Store } from '../../store/index.js';
import { svixErrors } from './errors.js';
import { keptMessageAnswer, replayedMessageAnswer } from './kept-message.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The idempotency key this request claimed (Svix surface): its answer is kept under it. */
    replayKey?: string;
  }
  interface FastifyContextConfig {
    /** A route whose answer holds a credential (a portal link's token): never kept, so never replayed. */
    credentialAnswer?: boolean;
    /** A route whose answer shows a message with its payload: kept without it, filled in when replayed. */
    messageAnswer?: boolean;
  }
}

/**
 * The key a Svix message create gives its emit (Messages.emit: the environment's idempotency keys, which
 * also hold the native surface's). A Svix key is scoped to its request, method and path with the
 * application as the path names it, and a native key to the environment whatever the body names: the
 * emit's key carries the surface and the path, so neither surface repeats an emit of the other, and a
 * key never answers with a message of an application its request did not name. It backs the kept answer
 * (a repeat after a first request that died between its emit and its answer still creates nothing).
 */
export const emitKeyOf = (appInPath: string, key: string) => `svix:POST /api/v1/app/${appInPath}/msg:${key}`;

/** Longest idempotency key taken (the SDK's are `auto_` and a UUID). */
const MAX_KEY = 255;

/**
 * Every POST of the Svix surface honours `idempotency-key`, as Svix's does (its SDK sends one on each
 * POST and retries a 5xx twice): a repeat within HERALD_IDEMPOTENCY_TTL answers as the first did, with
 * `idempotent-replayed: true`, so nothing is created twice; a repeat while the first still runs is 409,
 * and so is the key sent with another method or path. Only successes are kept: a refused or failed
 * request created nothing, so its repeat runs. An answer that holds a credential is never kept (the
 * store keeps credentials hashed only): such a route makes a new one on each call. An answer that shows a
 * message's payload is kept without it, and a repeat shows the payload only while reads do (kept-message.ts).
 */
export function installIdempotency(app: FastifyInstance, store: Store): void {
  app.addHook('onRoute', (route) => {
    const response = route.schema?.response as Record<number, unknown> | undefined;
    if (route.method === 'POST' && response) response[409] ??= svixErrors(409)[409];
  });
  app.addHook('preHandler', async (request, reply) => {
    const key = request.headers['idempotency-key'];
    if (request.method !== 'POST' || typeof key !== 'string' || key === '' || !request.caller) return;
    if (request.routeOptions.config.credentialAnswer) return;
    if (key.length > MAX_KEY) throw invalid(`idempotency-key is longer than ${MAX_KEY} characters`);
    const found = await store.requestReplays.claim(request.caller.scope, key, `POST ${request.url.split('?')[0]}`);
    if (found.kind === 'first') {
      request.replayKey = key;
      return;
    }
    if (found.kind === 'running')
      throw conflict('a request with this idempotency-key is still being answered; repeat it shortly');
    if (found.kind === 'other-request') throw conflict(`this idempotency-key was used for ${found.request}`);
    const body =
      found.body && request.routeOptions.config.messageAnswer
        ? await replayedMessageAnswer(store, found.body)
        : found.body;
    reply.code(found.status).header('idempotent-replayed', 'true');
    if (body) reply.type('application/json');
    return reply.send(body ?? undefined);
  });
  app.addHook('onSend', async (request, reply, payload) => {
    if (request.replayKey && request.caller) {
      let kept = typeof payload === 'string' && payload !== '' ? payload : null;
      if (kept && reply.statusCode < 300 && request.routeOptions.config.messageAnswer)
        kept = keptMessageAnswer(kept, (request.query as { with_content?: boolean }).with_content !== false);
      await store.requestReplays.finish(request.caller.scope, request.replayKey, reply.statusCode, kept);
    }
    return payload;
  });
}
