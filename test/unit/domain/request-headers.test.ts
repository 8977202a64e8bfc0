import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { headerBlock, parseHeaderBlock } from '../../../src/domain/headers.js';
import { keptByName, sentRequestHeaders, USER_AGENT } from '../../../src/domain/request-headers.js';

// An attempt keeps of its request's headers what cannot be told again: the content type, the user agent,
// webhook-id and the svix-* copies are kept by name and read back with their values.

const MESSAGE = 'msg_2Yx4sQ';

/** A block as kept: derivable lines by name. */
const kept = (pairs: [string, string][], redact = true) => headerBlock(pairs, redact, undefined, keptByName(MESSAGE));

function requestPairs(svix: boolean, own: [string, string][] = []): [string, string][] {
  const pairs: [string, string][] = [
    ...own,
    ['content-type', 'application/json'],
    ['user-agent', USER_AGENT],
    ['webhook-id', MESSAGE],
    ['webhook-timestamp', '1796200000'],
    ['webhook-signature', 'v1,abc= v1,def='],
    ['traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'],
  ];
  if (svix) pairs.push(['svix-id', MESSAGE], ['svix-timestamp', '1796200000'], ['svix-signature', 'v1,abc= v1,def=']);
  return pairs;
}

test('a request block is kept without what derives, and reads back exactly as sent', () => {
  for (const svix of [false, true]) {
    const pairs = requestPairs(svix, [['x-tenant', 'acme']]);
    const sent = headerBlock(pairs, true);
    const block = kept(pairs);
    assert.ok(block.length <= sent.length - (svix ? 120 : 80), `kept ${block.length} of ${sent.length} characters`);
    assert.ok(!block.includes(USER_AGENT));
    assert.match(block, /^webhook-signature: v1,abc= v1,def=$/m, 'the signature is kept');
    assert.match(block, /^traceparent: /m, 'the trace context is kept');
    assert.equal(sentRequestHeaders(block, MESSAGE), sent);
    assert.deepEqual(parseHeaderBlock(sentRequestHeaders(block, MESSAGE)), parseHeaderBlock(sent));
  }
});

test('a value that differs from what it would derive to is kept as it was', () => {
  // Another message's id (a block read with the wrong message would show it wrongly: kept whole instead).
  const pairs: [string, string][] = [
    ['webhook-id', 'msg_other'],
    ['user-agent', 'Herald-Webhooks/0.0'],
    ['webhook-timestamp', '1'],
    ['svix-timestamp', '2'],
  ];
  const sent = headerBlock(pairs, true);
  assert.equal(kept(pairs), sent);
  // Blocks kept before this form have no `@` lines and read back unchanged.
  assert.equal(sentRequestHeaders(sent, MESSAGE), sent);
});

test('any block of header lines reads back as it was sent', () => {
  const name = fc.constantFrom(
    'content-type',
    'user-agent',
    'webhook-id',
    'webhook-timestamp',
    'webhook-signature',
    'svix-id',
    'svix-timestamp',
    'svix-signature',
    'x-tenant',
  );
  // A header value holds no line end (headers.ts: what can be sent).
  const value = fc.oneof(
    fc.constantFrom(MESSAGE, USER_AGENT, 'application/json', '17', 'v1,a='),
    fc.string().filter((text) => !text.includes('\n')),
  );
  fc.assert(
    fc.property(fc.array(fc.tuple(name, value), { maxLength: 12 }), (pairs) => {
      for (const redact of [false, true])
        assert.equal(sentRequestHeaders(kept(pairs, redact), MESSAGE), headerBlock(pairs, redact));
    }),
    { numRuns: 2_000 },
  );
});
