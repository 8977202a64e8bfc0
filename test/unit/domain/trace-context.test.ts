import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  formatTraceparent,
  keptTracestate,
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

test('a traceparent with upper-case hex is not valid: W3C has lower case only, and a new trace starts', () => {
  assert.equal(parseTraceparent(`00-${TRACE.toUpperCase()}-${SPAN}-01`), null);
  assert.equal(parseTraceparent(`00-${TRACE}-${SPAN.toUpperCase()}-01`), null);
  assert.equal(parseTraceparent(`00-${TRACE}-${SPAN}-0A`), null);
  assert.equal(parseTraceparent(`0A-${TRACE}-${SPAN}-01`), null);
  assert.equal(parseTraceparent(` 00-${TRACE}-${SPAN}-01 `)?.traceId, TRACE, 'spaces around it are allowed');
  const upper = `00-${TRACE.toUpperCase()}-${SPAN}-01`;
  assert.notEqual(messageTrace('evt_1', upper, null).traceId, TRACE, 'a stored one is not read either');
});

test("tracestate keeps only the list members W3C's grammar takes, in order", () => {
  const k = (header: string) => keptTracestate(header);
  assert.equal(k('good=1,bad=<script>=1'), 'good=1', 'a value holding = is dropped, the rest kept');
  assert.equal(k('good=1, Evil=x ,x y=1,=v,novalue=,plain,also=ok'), 'good=1,also=ok');
  // Keys: lcalpha first, then lcalpha, digits, _ - * /; or tenant@system.
  assert.equal(k('a_-*/9=1'), 'a_-*/9=1');
  assert.equal(k('9a=1'), null, 'a simple key starts with a letter');
  assert.equal(k('9tenant@sys=1,t@s-1=2'), '9tenant@sys=1,t@s-1=2', 'multi-tenant keys');
  assert.equal(k('t@9sys=1'), null, 'a system id starts with a letter');
  assert.equal(k(`t@${'s'.repeat(15)}=1`), null, 'a system id is at most 14 characters');
  assert.equal(k(`${'t'.repeat(242)}@s=1`), null, 'a tenant id is at most 241 characters');
  assert.equal(k(`${'a'.repeat(256)}=1`), `${'a'.repeat(256)}=1`);
  assert.equal(k(`${'a'.repeat(257)}=1`), null, 'a key is at most 256 characters');
  // Values: printable ASCII but , and =, not ending in a space, 1 to 256 characters.
  assert.equal(k('a=x y'), 'a=x y', 'spaces inside a value');
  assert.equal(k('a=x \t'), 'a=x', 'trailing spaces and tabs are whitespace around the member');
  assert.equal(k('a=x\ty'), null, 'a tab inside is not');
  assert.equal(k('a=\u00e9,b=\u0000,c=\u007f'), null);
  assert.equal(k(`a=${'v'.repeat(256)}`), `a=${'v'.repeat(256)}`);
  assert.equal(k(`a=${'v'.repeat(257)}`), null, 'a value is at most 256 characters');
  // The list: empty members and whitespace around members are allowed; a repeated key keeps the first.
  assert.equal(k(' , a=1 ,,\tb=2\t, '), 'a=1,b=2');
  assert.equal(k('a=1,a=2,b=3'), 'a=1,b=3');
  assert.equal(k(''), null);
  assert.equal(k(',,,'), null);
  // At most 32 members.
  const many = Array.from({ length: 40 }, (_, i) => `k${i}=${i}`);
  assert.equal(k(many.join(',')), many.slice(0, 32).join(','));
  // Over 512 characters: members longer than 128 go first, then members from the end.
  const long = `long=${'x'.repeat(200)}`;
  const mid = Array.from({ length: 6 }, (_, i) => `m${i}=${'y'.repeat(80)}`);
  const kept = k([mid[0], long, ...mid.slice(1)].join(','))!;
  assert.ok(kept.length <= TRACESTATE_MAX_CHARS, `${kept.length} characters`);
  assert.equal(kept, mid.slice(0, 6).join(','), 'the long member went; the six of 83 characters fit');
  const more = Array.from({ length: 10 }, (_, i) => `m${i}=${'y'.repeat(80)}`);
  assert.equal(k(more.join(',')), more.slice(0, 6).join(','), 'then members from the end');
  // Linear: a header of many spaces is read at once.
  const started = performance.now();
  k(`a=1${' '.repeat(100_000)}x`);
  k(`${' '.repeat(100_000)}=`);
  assert.ok(performance.now() - started < 100);
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
