import type { Config } from '../config.js';
import { formatTraceparent, messageTrace, newSpanId } from '../domain/trace-context.js';
import type { AttemptInput } from '../store/queue/index.js';
import { headerContext, type Tracer } from './port.js';

// The tracer a process uses (src/tracing/port.ts says what one is). Without the OTEL_* variables
// (Config.tracing) it is `untraced`: no span is made or exported, and the only work is the trace context each
// emit keeps and each attempt sends. With them, src/tracing/otel.ts makes and exports the spans; its packages
// load only then.

/** The trace of an attempt's message (messageTrace): the context its attempts descend from. */
export function traceOf(delivery: Pick<AttemptInput['delivery'], 'messageId' | 'traceparent' | 'tracestate'>) {
  return messageTrace(delivery.messageId, delivery.traceparent, delivery.tracestate);
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
