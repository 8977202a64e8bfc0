import type { FastifyReply, FastifyRequest } from 'fastify';
import { parseTraceparent, type TraceContext } from '../domain/trace-context.js';

// What the API and the worker ask of tracing: the Tracer that both tracers implement (tracer.ts's
// `untraced`, otel.ts's OtelTracer), and the context a request's own headers name, where both start.

/** What an attempt's span needs to describe it (HTTP client semantic conventions). */
export interface AttemptSpanFields {
  url: string;
  deliveryId: string;
  endpointId: string;
  attemptNumber: number;
}

/** What an emit's span names: the application (as the caller named it) and the event type. */
export interface EmitSpanFields {
  appId: string;
  eventType: string;
}

/** An attempt's span: the `traceparent` the request carries, and its end with what the attempt gave. */
export interface AttemptSpan {
  traceparent: string;
  end(outcome: { responseStatus: number | null; error: string | null }): void;
}

export interface Tracer {
  /** The context a request comes in with: its server span's when spans are made, else its own header's. */
  requestContext(request: FastifyRequest): TraceContext | null;
  /**
   * Runs an emit's write in its span, giving `write` the context to keep with the message (null: none, and
   * the message's trace is derived from its id).
   */
  emit<T>(
    parent: TraceContext | null,
    fields: EmitSpanFields,
    write: (kept: TraceContext | null) => Promise<T>,
  ): Promise<T>;
  /** Starts an attempt's span as a child of the message's context. */
  attempt(message: TraceContext, fields: AttemptSpanFields): AttemptSpan;
  /** Hooks that make a server span per API request; absent when no span is made. */
  serverSpans?: {
    onRequest(request: FastifyRequest): void;
    onResponse(request: FastifyRequest, reply: FastifyReply): void;
  };
  /** Exports what is still buffered and stops. */
  shutdown(): Promise<void>;
}

/** The context named by a request's own `traceparent` / `tracestate` headers. */
export function headerContext(request: FastifyRequest): TraceContext | null {
  const { traceparent, tracestate } = request.headers;
  return parseTraceparent(
    typeof traceparent === 'string' ? traceparent : undefined,
    typeof tracestate === 'string' ? tracestate : undefined,
  );
}
