import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  formatTraceparent,
  messageTrace,
  newSpanId,
  parseTraceparent,
  TRACESTATE_MAX_CHARS,
} from '../../../src/domain/trace-context.js';
import { ConfigError, loadConfig } from '../../../src/config.js';

// W3C Trace Context parsing (https://www.w3.org/TR/trace-context/#traceparent-header) and the trace a
// message gets, as pure rules.

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

test('a traceparent is parsed as W3C says: version 00 exactly, later versions extensible, invalid ones ignored', () => {
  assert.deepEqual(parseTraceparent(`00-${TRACE}-${SPAN}-01`, 'a=1'), {
    traceId: TRACE,
    spanId: SPAN,
    flags: 1,
    tracestate: 'a=1',
  });
  assert.equal(parseTraceparent(`00-${TRACE}-${SPAN}-01-extra`), null, 'version 00 has four fields');
  assert.equal(parseTraceparent(`01-${TRACE}-${SPAN}-03-extra`)?.flags, 3, 'a later version may add fields');
  assert.equal(parseTraceparent(`ff-${TRACE}-${SPAN}-01`), null, 'version ff is invalid');
  assert.equal(parseTraceparent(`00-${'0'.repeat(32)}-${SPAN}-01`), null, 'all-zero trace id');
  assert.equal(parseTraceparent(`00-${TRACE}-${'0'.repeat(16)}-01`), null, 'all-zero parent id');
  assert.equal(parseTraceparent(`00-${TRACE.slice(1)}-${SPAN}-01`), null);
  assert.equal(parseTraceparent(`00-${TRACE}-${SPAN}-1`), null);
  assert.equal(parseTraceparent(undefined), null);
  assert.equal(parseTraceparent('x'.repeat(10_000)), null);
  // A tracestate too long, or with characters outside printable ASCII, is dropped (the context is kept).
  assert.equal(parseTraceparent(`00-${TRACE}-${SPAN}-01`, 'a'.repeat(TRACESTATE_MAX_CHARS + 1))?.tracestate, null);
  assert.equal(parseTraceparent(`00-${TRACE}-${SPAN}-01`, 'a=\u00e9')?.tracestate, null);
  assert.equal(formatTraceparent({ traceId: TRACE, spanId: SPAN, flags: 1 }), `00-${TRACE}-${SPAN}-01`);
});

test("a message's trace: the stored one, or one derived from its id, the same wherever it is computed", () => {
  assert.equal(messageTrace('evt_1', `00-${TRACE}-${SPAN}-00`, 'k=v').traceId, TRACE);
  const derived = messageTrace('evt_1', null, null);
  assert.match(derived.traceId, /^[0-9a-f]{32}$/);
  assert.deepEqual(messageTrace('evt_1', null, null), derived, 'deterministic');
  assert.notEqual(messageTrace('evt_2', null, null).traceId, derived.traceId);
  assert.equal(derived.flags, 1, 'sampled');
  const ids = new Set(Array.from({ length: 1000 }, newSpanId));
  assert.equal(ids.size, 1000);
  assert.ok([...ids].every((id) => /^[0-9a-f]{16}$/.test(id) && id !== '0'.repeat(16)));
});

test('OTEL_* variables turn export on only when an OTLP endpoint is set, and refuse what Herald cannot send', () => {
  const base = { HERALD_SECRET_KEY: 'test-secret-key-that-is-long-enough-0123456789', HERALD_DATA_DIR: '/tmp/x' };
  assert.equal(loadConfig(base).tracing, false);
  assert.equal(loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }).tracing, true);
  assert.equal(
    loadConfig({ ...base, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' }).tracing,
    true,
  );
  assert.equal(
    loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' }).tracing,
    false,
  );
  assert.equal(
    loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_EXPORTER: 'none' }).tracing,
    false,
  );
  assert.throws(
    () => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
    (error) => error instanceof ConfigError && /http\/json/.test(error.message),
  );
  assert.throws(
    () => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x:4318', OTEL_TRACES_EXPORTER: 'zipkin' }),
    ConfigError,
  );
});
