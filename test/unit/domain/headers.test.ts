import { test } from 'node:test';
import assert from 'node:assert/strict';
import { headersProblem, MAX_HEADERS, mergedHeaders, REDACTED, shownHeaders } from '../../../src/domain/headers.js';

// An endpoint's own headers: which are refused (naming the header), which are shown redacted, and how an
// update that sends back a redacted value keeps the stored one.

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
    Authorization: 'Bearer s3cret',
    Cookie: 'session=1',
    'X-Api-Key': 'k',
    'X-Auth-Token': 't',
    'X-Client-Secret': 's',
    'Proxy-Authorization': 'p',
    'X-Tenant': 'acme',
  };
  assert.deepEqual(shownHeaders(stored), {
    Authorization: REDACTED,
    Cookie: REDACTED,
    'X-Api-Key': REDACTED,
    'X-Auth-Token': REDACTED,
    'X-Client-Secret': REDACTED,
    'Proxy-Authorization': REDACTED,
    'X-Tenant': 'acme',
  });
  assert.deepEqual(mergedHeaders({ authorization: REDACTED, 'X-Tenant': 'globex', 'X-New': REDACTED }, stored), {
    authorization: 'Bearer s3cret',
    'X-Tenant': 'globex',
    'X-New': REDACTED,
  });
});
