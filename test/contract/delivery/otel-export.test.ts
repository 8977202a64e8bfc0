import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setup, startReceiver } from '../../support/delivery.js';
import { eventually } from '../../support/receiver.js';
import { parseTraceparent } from '../../../src/domain/trace-context.js';

// OpenTelemetry export (decisions, "Content filters and trace context"): with OTEL_EXPORTER_OTLP_ENDPOINT
// set, Herald exports a server span per API request, a span per emit's write and a client span per
// attempt over OTLP/HTTP (JSON), to a real OTLP receiver in this process. The receiver's traceparent names
// the attempt's exported span, whose parent chain reaches the caller's span through the emit.

interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, string | number>;
  resource: Record<string, string | number>;
}

const SERVER = 2;
const CLIENT = 3;
const PRODUCER = 4;

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean };
const attributes = (list: { key: string; value: AnyValue }[] = []) =>
  Object.fromEntries(
    list.map(({ key, value }) => [
      key,
      value.stringValue ?? (value.intValue === undefined ? '' : Number(value.intValue)),
    ]),
  );

/** An OTLP/HTTP JSON receiver: every span posted to /v1/traces. */
async function startCollector(): Promise<{ url: string; spans: ExportedSpan[]; server: Server }> {
  const spans: ExportedSpan[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      assert.equal(req.url, '/v1/traces');
      assert.match(String(req.headers['content-type']), /application\/json/);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      for (const rs of body.resourceSpans ?? []) {
        const resource = attributes(rs.resource?.attributes);
        for (const ss of rs.scopeSpans ?? [])
          for (const span of ss.spans ?? [])
            spans.push({
              ...span,
              attributes: attributes(span.attributes),
              resource,
              parentSpanId: span.parentSpanId || undefined,
            });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, server };
}

test('spans are exported over OTLP/HTTP: request, emit and each attempt, linked from the caller to the receiver', async (t) => {
  const collector = await startCollector();
  t.after(() => collector.server.close());
  // The exporter reads the standard variables from the process's environment, as it does in production.
  const saved = { ...process.env };
  Object.assign(process.env, {
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
    OTEL_BSP_SCHEDULE_DELAY: '50',
    OTEL_SERVICE_NAME: 'herald-under-test',
  });
  t.after(() => {
    for (const name of ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_BSP_SCHEDULE_DELAY', 'OTEL_SERVICE_NAME'])
      if (saved[name] === undefined) delete process.env[name];
  });
  const s = await setup(t, { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url });
  let answers = 0;
  const receiver = await startReceiver(t, () => (++answers === 1 ? { status: 503 } : { status: 200 }));
  const endpoint = await s.endpoint(`${receiver.url}/hook?token=secret-in-query`);

  const callerTrace = '0af7651916cd43dd8448eb211c80319c';
  const callerSpan = 'b7ad6b7169203331';
  const emitted = await s.api.post(
    '/api/v1/messages',
    { app_id: s.appId, event_type: 'invoice.paid', payload: { n: 1 } },
    { traceparent: `00-${callerTrace}-${callerSpan}-01` },
  );
  assert.equal(emitted.status, 201);
  const [deliveryId] = emitted.body.delivery_ids as string[];
  await s.until(deliveryId!, (d) => d.status === 'success', 'delivered on the retry');

  const inTrace = () => collector.spans.filter((span) => span.traceId === callerTrace);
  await eventually(
    async () => inTrace().filter((span) => span.kind === CLIENT).length >= 2 || undefined,
    10_000,
    'both attempt spans exported',
  );
  const server = inTrace().find((span) => span.kind === SERVER && span.attributes['http.route'] === '/api/v1/messages');
  assert.ok(server, 'a server span for the emit request');
  assert.equal(server.parentSpanId, callerSpan, "the request's span is a child of the caller's");
  assert.equal(server.name, 'POST /api/v1/messages');
  assert.equal(server.attributes['http.request.method'], 'POST');
  assert.equal(server.attributes['http.response.status_code'], 201);
  assert.equal(server.resource['service.name'], 'herald-under-test');

  const emit = inTrace().find((span) => span.kind === PRODUCER);
  assert.ok(emit, "a span for the emit's write");
  assert.equal(emit.parentSpanId, server.spanId);
  assert.equal(emit.attributes['herald.event_type'], 'invoice.paid');

  const attempts = inTrace().filter((span) => span.kind === CLIENT);
  assert.equal(attempts.length, 2, 'one client span per attempt, the retry in the same trace');
  for (const attempt of attempts) {
    assert.equal(attempt.parentSpanId, emit.spanId, "each attempt descends from the emit's span");
    assert.equal(attempt.attributes['http.request.method'], 'POST');
    assert.equal(attempt.attributes['url.full'], `${receiver.url}/hook`, 'no query: it may carry secrets');
    assert.equal(attempt.attributes['herald.delivery_id'], deliveryId);
    assert.equal(attempt.attributes['herald.endpoint_id'], endpoint.id);
  }
  assert.deepEqual(attempts.map((a) => a.attributes['http.response.status_code']).sort(), [200, 503]);
  // What the receiver got names the exported attempt spans.
  const sent = receiver.received.map((r) => parseTraceparent(String(r.headers.traceparent)));
  assert.deepEqual(
    sent.map((c) => c?.spanId).sort(),
    attempts.map((a) => a.spanId).sort(),
    "each request's traceparent is its attempt's span",
  );
  assert.ok(sent.every((c) => c?.traceId === callerTrace));
  assert.ok(
    JSON.stringify(collector.spans).includes('secret-in-query') === false,
    'no exported span carries the query',
  );

  // A message emitted outside a trace: its request span starts one, and its attempt joins it.
  const own = await s.emit({ n: 2 });
  const ownTrace = (await s.api.get(`/api/v1/messages/${own.id}`)).body.trace_id as string;
  assert.notEqual(ownTrace, callerTrace);
  await eventually(
    async () => collector.spans.some((span) => span.traceId === ownTrace && span.kind === CLIENT) || undefined,
    10_000,
    "the second message's attempt span exported",
  );
  const root = collector.spans.find((span) => span.traceId === ownTrace && span.kind === SERVER);
  assert.ok(root && root.parentSpanId === undefined, "the emit request's span is the trace's root");
});
