import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import {
  formatTraceparent,
  messageTrace,
  newSpanId,
  parseTraceparent,
  type TraceContext,
} from '../domain/trace-context.js';
import type { AttemptInput } from '../store/queue.js';

// What the API and the worker ask of tracing. Without the OTEL_* variables (Config.tracing) it is
// `untraced`: no span is made or exported, and the only work is the trace context each emit keeps and each
// attempt sends. With them, src/tracing/otel.ts makes and exports the spans; its packages load only then.

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

/** The trace of an attempt's message (messageTrace): the context its attempts descend from. */
export function traceOf(delivery: Pick<AttemptInput['delivery'], 'messageId' | 'traceparent' | 'tracestate'>) {
  return messageTrace(delivery.messageId, delivery.traceparent, delivery.tracestate);
}

/** The context named by a request's own `traceparent` / `tracestate` headers. */
export function headerContext(request: FastifyRequest): TraceContext | null {
  const { traceparent, tracestate } = request.headers;
  return parseTraceparent(
    typeof traceparent === 'string' ? traceparent : undefined,
    typeof tracestate === 'string' ? tracestate : undefined,
  );
}

/** Tracing without spans: the caller's context is kept as it came, and each attempt is a new span id in it. */
export const untraced: Tracer = {
  requestContext: headerContext,
  emit: (parent, _fields, write) => write(parent),
  attempt: (message) => ({
    traceparent: formatTraceparent({ ...message, spanId: newSpanId() }),
    end: () => {},
  }),
  shutdown: async () => {},
};

/** The tracer Config.tracing asks for. */
export async function startTracing(config: Pick<Config, 'tracing'>): Promise<Tracer> {
  if (!config.tracing) return untraced;
  const { OtelTracer } = await import('./otel.js');
  return new OtelTracer();
}
