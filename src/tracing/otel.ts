import {
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Tracer as OtelApiTracer,
} from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_SERVICE_NAME,
  ATTR_URL_FULL,
  ATTR_URL_PATH,
  ATTR_URL_SCHEME,
} from '@opentelemetry/semantic-conventions';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { formatTraceparent, type TraceContext } from '../domain/trace-context.js';
import { type AttemptSpan, type AttemptSpanFields, type EmitSpanFields, headerContext, type Tracer } from './port.js';

// Spans made with the official OpenTelemetry SDK and exported over OTLP/HTTP (JSON) by its exporter, which
// reads the standard OTEL_* variables (endpoint, headers, timeout; OTEL_BSP_* for batching, OTEL_TRACES_
// SAMPLER for sampling, OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES for the resource). Parents are passed
// explicitly, so no context manager is installed and nothing global is registered.

/** The package's own attributes, beside the HTTP semantic conventions. */
const ATTR = {
  deliveryId: 'herald.delivery_id',
  endpointId: 'herald.endpoint_id',
  attemptNumber: 'herald.attempt_number',
  appId: 'herald.app_id',
  eventType: 'herald.event_type',
} as const;

/** An OTel parent context for a stored trace context (a span that may be in another process). */
function parentOf(context: TraceContext): Context {
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: context.traceId,
    spanId: context.spanId,
    traceFlags: context.flags,
    isRemote: true,
    ...(context.tracestate ? { traceState: new TraceState(context.tracestate) } : {}),
  });
}

/** The trace context a span's children descend from, carrying its parent's tracestate. */
function contextOf(span: Span, tracestate: string | null): TraceContext {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return { traceId, spanId, flags: traceFlags, tracestate };
}

/** The URL a span may show: no credentials, query or fragment (they may carry secrets). */
function shownUrl(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`;
}

export class OtelTracer implements Tracer {
  private readonly provider: BasicTracerProvider;
  private readonly tracer: OtelApiTracer;
  private readonly requests = new WeakMap<FastifyRequest, { span: Span; tracestate: string | null }>();

  constructor() {
    const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'herald' }).merge(
      detectResources({ detectors: [envDetector] }),
    );
    this.provider = new BasicTracerProvider({
      resource,
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
    });
    this.tracer = this.provider.getTracer('herald');
  }

  requestContext(request: FastifyRequest): TraceContext | null {
    const server = this.requests.get(request);
    return server ? contextOf(server.span, server.tracestate) : headerContext(request);
  }

  async emit<T>(
    parent: TraceContext | null,
    fields: EmitSpanFields,
    write: (kept: TraceContext | null) => Promise<T>,
  ): Promise<T> {
    const span = this.tracer.startSpan(
      'herald.emit',
      { kind: SpanKind.PRODUCER, attributes: { [ATTR.appId]: fields.appId, [ATTR.eventType]: fields.eventType } },
      parent ? parentOf(parent) : ROOT_CONTEXT,
    );
    try {
      return await write(contextOf(span, parent?.tracestate ?? null));
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      throw error;
    } finally {
      span.end();
    }
  }

  attempt(message: TraceContext, fields: AttemptSpanFields): AttemptSpan {
    const url = new URL(fields.url);
    const span = this.tracer.startSpan(
      'POST',
      {
        kind: SpanKind.CLIENT,
        attributes: {
          [ATTR_HTTP_REQUEST_METHOD]: 'POST',
          [ATTR_URL_FULL]: shownUrl(url),
          [ATTR_SERVER_ADDRESS]: url.hostname,
          [ATTR_SERVER_PORT]: Number(url.port) || (url.protocol === 'https:' ? 443 : 80),
          [ATTR.deliveryId]: fields.deliveryId,
          [ATTR.endpointId]: fields.endpointId,
          [ATTR.attemptNumber]: fields.attemptNumber,
        },
      },
      parentOf(message),
    );
    return {
      traceparent: formatTraceparent(contextOf(span, null)),
      end: ({ responseStatus, error }) => {
        if (responseStatus !== null) span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, responseStatus);
        if (error !== null || responseStatus === null || responseStatus >= 300) {
          span.setAttribute(ATTR_ERROR_TYPE, responseStatus === null ? 'no_response' : String(responseStatus));
          span.setStatus({ code: SpanStatusCode.ERROR, ...(error === null ? {} : { message: error }) });
        }
        span.end();
      },
    };
  }

  readonly serverSpans = {
    onRequest: (request: FastifyRequest): void => {
      const caller = headerContext(request);
      const route = request.routeOptions.url;
      const path = request.url.split('?', 1)[0]!;
      const span = this.tracer.startSpan(
        route === undefined ? request.method : `${request.method} ${route}`,
        {
          kind: SpanKind.SERVER,
          attributes: {
            [ATTR_HTTP_REQUEST_METHOD]: request.method,
            [ATTR_URL_PATH]: path,
            [ATTR_URL_SCHEME]: request.protocol,
            ...(route === undefined ? {} : { [ATTR_HTTP_ROUTE]: route }),
          },
        },
        caller ? parentOf(caller) : ROOT_CONTEXT,
      );
      this.requests.set(request, { span, tracestate: caller?.tracestate ?? null });
    },
    onResponse: (request: FastifyRequest, reply: FastifyReply): void => {
      const server = this.requests.get(request);
      if (!server) return;
      this.requests.delete(request);
      server.span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, reply.statusCode);
      if (reply.statusCode >= 500) {
        server.span.setAttribute(ATTR_ERROR_TYPE, String(reply.statusCode));
        server.span.setStatus({ code: SpanStatusCode.ERROR });
      }
      server.span.end();
    },
  };

  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}
