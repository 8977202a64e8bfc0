import type { FastifyInstance } from 'fastify';
import type { Tracer } from '../tracing/port.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The trace of the message this request emitted, for its log line; null: it emitted none. */
    traceId: string | null;
  }
}

/** A server span per request when the tracer makes spans (src/tracing/), and the request's trace id for its log line. */
export function installTracing(app: FastifyInstance, tracer: Tracer): void {
  app.decorateRequest('traceId', null);
  const hooks = tracer.serverSpans;
  if (!hooks) return;
  app.addHook('onRequest', async (request) => hooks.onRequest(request));
  app.addHook('onResponse', async (request, reply) => hooks.onResponse(request, reply));
}
