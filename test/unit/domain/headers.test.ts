import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  headerBlock,
  headersFromText,
  headersProblem,
  headersText,
  isSensitiveHeader,
  MAX_HEADERS,
  markedNames,
  mergedHeaders,
  NO_HEADERS,
  parseHeaderBlock,
  REDACTED,
  STORED_HEADER_NAME_LIMIT,
  STORED_HEADER_VALUE_LIMIT,
  STORED_HEADERS_LIMIT,
  sensitiveNames,
  shownHeaders,
  TRUNCATED,
} from '../../../src/domain/headers.js';

// An endpoint's own headers: which are refused (naming the header), which are shown redacted (by name or
// marked), and how an update that sends back a redacted value keeps the stored one; and an attempt's header
// block: every name kept as plain data, a long value cut instead of what follows dropped.

test('headers: HTTP token names, values HTTP can send, no reserved or hop-by-hop names, at most 20', () => {
  assert.equal(headersProblem({ Authorization: 'Bearer abc', 'X-Tenant': 'acme', 'x-Latin1': 'café ±½ÿ' }), null);
  const refused: [Record<string, string>, RegExp][] = [
    [{ 'X Tenant': 'a' }, /"X Tenant" is not a valid header name/],
    [{ '': 'a' }, /"" is not a valid header name/],
    [{ 'Content-Type': 'text/plain' }, /"Content-Type" is set by Herald/],
    [{ host: 'evil' }, /"host" is set by Herald/],
    [{ 'Webhook-Signature': 'v1,forged' }, /"Webhook-Signature" is set by Herald/],
    [{ 'webhook-anything': 'x' }, /"webhook-anything" is set by Herald/],
    [{ 'User-Agent': 'x' }, /"User-Agent" is set by Herald/],
    [{ 'Transfer-Encoding': 'chunked' }, /"Transfer-Encoding" is set by Herald/],
    [{ 'X-A': 'line\r\nInjected: yes' }, /value of "X-A" holds a character HTTP cannot send/],
    [{ 'X-A': 'nul\u0000' }, /value of "X-A" holds a character HTTP cannot send/],
    [{ 'X-A': 'c1 \u0085' }, /value of "X-A" holds a character HTTP cannot send/],
    [{ 'X-A': 'price: 5 €' }, /value of "X-A" holds a character HTTP cannot send/],
    [{ 'X-A': 'emoji ✓' }, /value of "X-A" holds a character HTTP cannot send/],
    [{ 'X-A': 'half \ud800 a pair' }, /value of "X-A" holds a character HTTP cannot send/],
    [{ 'X-A': ' padded ' }, /value of "X-A" must not start or end with spaces/],
    [{ Expect: '100-continue' }, /"Expect" describes the connection or a proxy/],
    [{ Upgrade: 'websocket' }, /"Upgrade" describes the connection or a proxy/],
    [{ 'Keep-Alive': 'timeout=5' }, /"Keep-Alive" describes the connection or a proxy/],
    [{ TE: 'trailers' }, /"TE" describes the connection or a proxy/],
    [{ Trailer: 'X-B' }, /"Trailer" describes the connection or a proxy/],
    [{ 'Proxy-Authorization': 'Basic eA==' }, /"Proxy-Authorization" describes the connection or a proxy/],
    [{ 'proxy-connection': 'keep-alive' }, /"proxy-connection" describes the connection or a proxy/],
    [{ 'X-A': 'x'.repeat(1_025) }, /value of "X-A" is longer than 1024/],
    [{ 'X-A': '1', 'x-a': '2' }, /"x-a" is given twice/],
    [Object.fromEntries(Array.from({ length: MAX_HEADERS + 1 }, (_, i) => [`X-${i}`, 'v'])), /at most 20 headers/],
  ];
  for (const [headers, message] of refused)
    assert.match(headersProblem(headers) ?? '', message, JSON.stringify(headers));
  assert.equal(headersProblem({ 'X-A': 'x'.repeat(1_024) }), null, '1,024 characters is allowed');
  assert.equal(headersProblem({ 'X-A': 'tab\tinside' }), null, 'a tab inside is printable');
});

test('reads redact credentials; an update that sends a redacted value back keeps the stored one', () => {
  const stored = {
    headers: {
      Authorization: 'Bearer s3cret',
      Cookie: 'session=1',
      'X-Api-Key': 'k',
      'X-Auth-Token': 't',
      'X-Client-Secret': 's',
      'Proxy-Authorization': 'p',
      'X-Password': 'hunter2',
      'X-Session-Id': 'abc',
      'X-Hub-Signature': 'sha1=0',
      'X-Tenant': 'acme',
    },
    sensitive: [],
  };
  assert.deepEqual(shownHeaders(stored), {
    Authorization: REDACTED,
    Cookie: REDACTED,
    'X-Api-Key': REDACTED,
    'X-Auth-Token': REDACTED,
    'X-Client-Secret': REDACTED,
    'Proxy-Authorization': REDACTED,
    'X-Password': REDACTED,
    'X-Session-Id': REDACTED,
    'X-Hub-Signature': REDACTED,
    'X-Tenant': 'acme',
  });
  assert.deepEqual(
    mergedHeaders(
      { authorization: REDACTED, 'x-password': REDACTED, 'X-Tenant': 'globex', 'X-New': REDACTED },
      undefined,
      stored,
    ),
    {
      headers: { authorization: 'Bearer s3cret', 'x-password': 'hunter2', 'X-Tenant': 'globex', 'X-New': REDACTED },
      sensitive: [],
    },
  );
});

test('a header marked sensitive reads redacted, keeps its value when sent back, and keeps its mark', () => {
  const stored = mergedHeaders({ 'X-Customer': 'c-42', 'X-Tenant': 'acme' }, ['x-customer'], NO_HEADERS);
  assert.deepEqual(stored, { headers: { 'X-Customer': 'c-42', 'X-Tenant': 'acme' }, sensitive: ['X-Customer'] });
  assert.deepEqual(shownHeaders(stored), { 'X-Customer': REDACTED, 'X-Tenant': 'acme' });
  assert.deepEqual(sensitiveNames(stored), ['X-Customer']);
  // Sent back as read, without the marks: the value and the mark stay.
  const again = mergedHeaders({ 'X-Customer': REDACTED, 'X-Tenant': 'globex' }, undefined, stored);
  assert.deepEqual(again, { headers: { 'X-Customer': 'c-42', 'X-Tenant': 'globex' }, sensitive: ['X-Customer'] });
  // The marks replaced: a mark naming no header is dropped.
  assert.deepEqual(mergedHeaders(again.headers, ['X-Tenant', 'X-Gone'], again).sensitive, ['X-Tenant']);
  // Sealed as pairs and opened the same; an object of name to value (no marks) opens too.
  assert.deepEqual(headersFromText(headersText(again)), again);
  assert.deepEqual(headersFromText('{"X-Api-Key":"k","X-A":"b"}'), {
    headers: { 'X-Api-Key': 'k', 'X-A': 'b' },
    sensitive: [],
  });
  // Herald's own signature headers are no credential; the endpoint's marks apply to the block it keeps.
  assert.equal(isSensitiveHeader('webhook-signature'), false);
  assert.equal(isSensitiveHeader('X-Signature'), true);
  assert.equal(
    headerBlock(
      [
        ['x-customer', 'c-42'],
        ['webhook-signature', 'v1,abc'],
        ['set-cookie', 's=1'],
      ],
      true,
      markedNames(again),
    ),
    'x-customer: <redacted>\nwebhook-signature: v1,abc\nset-cookie: <redacted>\n',
  );
});

test('a header block holds every name as plain data: __proto__, constructor and toString round-trip', () => {
  const pairs: [string, string][] = [
    ['__proto__', 'p'],
    ['constructor', 'c'],
    ['toString', 't'],
    ['hasOwnProperty', 'h'],
    ['x-a', '1'],
    ['X-A', '2'],
  ];
  const parsed = parseHeaderBlock(headerBlock(pairs, false));
  assert.deepEqual(Object.entries(parsed), [
    ['__proto__', 'p'],
    ['constructor', 'c'],
    ['tostring', 't'],
    ['hasownproperty', 'h'],
    ['x-a', '1, 2'],
  ]);
  assert.equal(Object.getPrototypeOf(parsed), null);
  assert.equal(
    JSON.stringify(parsed),
    '{"__proto__":"p","constructor":"c","tostring":"t","hasownproperty":"h","x-a":"1, 2"}',
  );
  // A block that does not name them has none of them.
  const plain = parseHeaderBlock('x-b: 1\n');
  assert.equal(plain.constructor, undefined);
  assert.equal(JSON.stringify(plain), '{"x-b":"1"}');
});

test('a long header value is cut and marked, and the headers after it are kept', () => {
  const block = headerBlock(
    [
      ['x-first', 'a'],
      ['x-long', 'v'.repeat(20 * 1024)],
      [`x-${'n'.repeat(1_000)}`, 'long name'],
      ['x-after', 'b'],
      ['x-last', 'c'],
    ],
    false,
  );
  assert.ok(block.length <= STORED_HEADERS_LIMIT);
  const parsed = parseHeaderBlock(block);
  assert.equal(parsed['x-first'], 'a');
  assert.equal(parsed['x-long'], `${'v'.repeat(STORED_HEADER_VALUE_LIMIT)}${TRUNCATED}`);
  assert.equal(parsed[`x-${'n'.repeat(STORED_HEADER_NAME_LIMIT - 2)}${TRUNCATED}`], 'long name');
  assert.equal(parsed['x-after'], 'b');
  assert.equal(parsed['x-last'], 'c');
  // Past the block's limit, whole lines are left out.
  const many = headerBlock(
    Array.from({ length: 20 }, (_, i): [string, string] => [`x-${i}`, 'w'.repeat(2_000)]),
    false,
  );
  assert.ok(many.length <= STORED_HEADERS_LIMIT);
  assert.equal(Object.keys(parseHeaderBlock(many)).length, Math.floor(STORED_HEADERS_LIMIT / (1_024 + 1 + 6 + 2)));
});
