import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, startReceiver } from '../../support/delivery.js';
import { eventually } from '../../support/receiver.js';
import { bootstrap } from '../../support/client.js';
import { startTestService } from '../../support/service.js';
import { parseTraceparent } from '../../../src/domain/trace-context.js';

// W3C trace context from the emit to the receiver (decisions, "Content filters and trace context"), with no
// OTEL_* variables set: the emit's traceparent and tracestate are kept with the message, every attempt
// sends a traceparent in the message's trace whose parent is the attempt's own span, and a message emitted
// outside a trace gets a trace of its own. Real service, real receiver, on the store under test.

const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

test("an emit's traceparent reaches the receiver in the message's trace: on retries and replays, with the tracestate", async (t) => {
  const s = await setup(t);
  let answers = 0;
  // The first attempt fails, so the retry is a second attempt in the same trace.
  const receiver = await startReceiver(t, () => (++answers === 1 ? { status: 500 } : { status: 200 }));
  await s.endpoint(`${receiver.url}/hook`);
  const emitted = await s.api.post(
    '/api/v1/messages',
    { app_id: s.appId, event_type: 'invoice.paid', payload: { n: 1 } },
    { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`, tracestate: 'acme=t61rcWkgMzE,other=x' },
  );
  assert.equal(emitted.status, 201, JSON.stringify(emitted.body));
  assert.equal(emitted.body.trace_id, CALLER_TRACE, "the emit's answer names the caller's trace");
  const [deliveryId] = emitted.body.delivery_ids as string[];
  await s.until(deliveryId!, (d) => d.status === 'success', 'delivered on the retry');
  assert.equal(receiver.received.length, 2);

  const replayed = await s.api.post(`/api/v1/messages/${emitted.body.id}/replay`);
  assert.equal(replayed.status, 200);
  await receiver.waitFor(3);

  const contexts = receiver.received.map((r) => {
    const context = parseTraceparent(String(r.headers.traceparent));
    assert.ok(context, `a valid traceparent: ${r.headers.traceparent}`);
    assert.equal(r.headers.tracestate, 'acme=t61rcWkgMzE,other=x', "the caller's tracestate goes along");
    return context;
  });
  for (const context of contexts) {
    assert.equal(context.traceId, CALLER_TRACE, 'first attempt, retry and replay stay in the trace');
    assert.notEqual(context.spanId, CALLER_SPAN, "the parent is the attempt's own span, not the caller's");
    assert.equal(context.flags, 1, "the caller's sampled flag is kept");
  }
  assert.equal(new Set(contexts.map((c) => c.spanId)).size, 3, 'each attempt is its own span');
  assert.equal((await s.api.get(`/api/v1/messages/${emitted.body.id}`)).body.trace_id, CALLER_TRACE);
});

test('a message emitted without a traceparent, or with a malformed one, starts a trace of its own', async (t) => {
  const s = await setup(t);
  const receiver = await startReceiver(t);
  await s.endpoint(`${receiver.url}/hook`);
  const first = await s.emit({ n: 1 });
  const second = await s.api.post(
    '/api/v1/messages',
    { app_id: s.appId, event_type: 'invoice.paid', payload: { n: 2 } },
    { traceparent: `00-${'0'.repeat(32)}-${CALLER_SPAN}-01` },
  );
  assert.equal(second.status, 201, 'a malformed traceparent does not refuse the emit');
  await receiver.waitFor(2);
  const traceOf = async (id: string) => (await s.api.get(`/api/v1/messages/${id}`)).body.trace_id as string;
  const traces = [await traceOf(first.id), await traceOf(second.body.id)];
  assert.match(traces[0]!, /^[0-9a-f]{32}$/);
  assert.notEqual(traces[0], traces[1], 'each message has its own trace');
  const sent = receiver.received.map((r) => parseTraceparent(String(r.headers.traceparent))?.traceId);
  assert.deepEqual(sent.sort(), [...traces].sort(), "each attempt carries its message's trace id");
  assert.ok(
    receiver.received.every((r) => r.headers.tracestate === undefined),
    'no tracestate was given',
  );
});

test("the emit's request log line carries the message's trace id, and endpoints cannot set the trace headers", async (t) => {
  const lines: string[] = [];
  const service = await startTestService({}, undefined, lines);
  t.after(() => service.stop());
  const { test: api } = await bootstrap(service.url);
  const app = await api.post('/api/v1/applications', { name: 'Acme' });
  const emitted = await api.post(
    '/api/v1/messages',
    { app_id: app.body.id, event_type: 'invoice.paid', payload: { n: 1 } },
    { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-00` },
  );
  assert.equal(emitted.status, 201);
  const logged = await eventually(
    async () =>
      lines
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .find((line) => line.msg === 'request' && line.method === 'POST' && line.url === '/api/v1/messages'),
    5_000,
    'the emit is logged',
  );
  assert.equal(logged.trace_id, CALLER_TRACE);
  for (const name of ['traceparent', 'tracestate']) {
    const refused = await api.post('/api/v1/endpoints', {
      app_id: app.body.id,
      url: 'http://127.0.0.1:9/hook',
      headers: { [name]: 'x' },
    });
    assert.equal(refused.status, 400, `${name} is Herald's to send`);
  }
});

test("only the tracestate members W3C's grammar takes reach the receiver; an upper-case traceparent starts a new trace", async (t) => {
  const s = await setup(t);
  const receiver = await startReceiver(t);
  await s.endpoint(`${receiver.url}/hook`);
  const traceparent = `00-${CALLER_TRACE}-${CALLER_SPAN}-01`;
  // An upper-case key, a value holding "=", a key with a space, a member with no key: each dropped.
  const withBad = await s.api.post(
    '/api/v1/messages',
    { app_id: s.appId, event_type: 'invoice.paid', payload: { n: 1 } },
    { traceparent, tracestate: 'good=1,Evil=<script>,bad=<script>=1,b d=x,=nokey' },
  );
  assert.equal(withBad.status, 201, JSON.stringify(withBad.body));
  await receiver.waitFor(1);
  assert.equal(receiver.received[0]!.headers.tracestate, 'good=1');
  assert.equal(parseTraceparent(String(receiver.received[0]!.headers.traceparent))?.traceId, CALLER_TRACE);

  // Nothing valid left: no tracestate at all.
  const allBad = await s.api.post(
    '/api/v1/messages',
    { app_id: s.appId, event_type: 'invoice.paid', payload: { n: 2 } },
    { traceparent, tracestate: 'Evil=<script>' },
  );
  assert.equal(allBad.status, 201);
  await receiver.waitFor(2);
  assert.equal(receiver.received[1]!.headers.tracestate, undefined);

  // Upper-case hex is not a valid traceparent: the message gets a trace of its own, and the caller's
  // tracestate goes with the caller's trace.
  const upper = await s.api.post(
    '/api/v1/messages',
    { app_id: s.appId, event_type: 'invoice.paid', payload: { n: 3 } },
    { traceparent: `00-${CALLER_TRACE.toUpperCase()}-${CALLER_SPAN.toUpperCase()}-01`, tracestate: 'good=1' },
  );
  assert.equal(upper.status, 201, 'an invalid traceparent does not refuse the emit');
  assert.notEqual(upper.body.trace_id, CALLER_TRACE);
  await receiver.waitFor(3);
  const sent = parseTraceparent(String(receiver.received[2]!.headers.traceparent));
  assert.ok(sent, 'the attempt sends a valid traceparent');
  assert.equal(sent.traceId, upper.body.trace_id);
  assert.notEqual(sent.traceId, CALLER_TRACE, 'not the upper-case trace id read as lower case');
  assert.equal(receiver.received[2]!.headers.tracestate, undefined);
});
