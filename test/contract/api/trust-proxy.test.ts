import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService } from '../../support/service.js';
import { Client } from '../../support/client.js';
import { assertError } from '../../support/api.js';
import { ConfigError, loadConfig } from '../../../src/config.js';

// HERALD_TRUST_PROXY: behind a load balancer the client's address comes from X-Forwarded-For, for the
// failed-authentication limit, the rate-limit keys and the request log, but only from a trusted proxy.
// Off by default: a client cannot choose its own address with a header.

const LIMIT = 3;

async function service(t: { after: (fn: () => Promise<void>) => void }, trust?: string) {
  const lines: string[] = [];
  const s = await startTestService(
    {
      HERALD_ROLE: 'api',
      HERALD_AUTH_FAILURE_LIMIT: String(LIMIT),
      ...(trust === undefined ? {} : { HERALD_TRUST_PROXY: trust }),
    },
    undefined,
    lines,
  );
  t.after(() => s.stop());
  let n = 0;
  /** A wrong key sent by the client at `forwardedFor` (as a balancer on loopback would forward it). */
  const guess = (forwardedFor: string) =>
    new Client(s.url, `sk_test_guess${String(n++).padStart(30, '0')}`).get('/api/v1/applications', {
      'x-forwarded-for': forwardedFor,
    });
  return { s, lines, guess };
}

const requestLines = (lines: string[]) =>
  lines
    .map((line) => JSON.parse(line))
    .filter((entry) => entry.msg === 'request' && entry.url === '/api/v1/applications');

for (const trust of ['127.0.0.1/8', '1', '10.0.0.0/8,127.0.0.1']) {
  test(`HERALD_TRUST_PROXY=${trust}: failed authentications count against the forwarded address`, async (t) => {
    const { lines, guess } = await service(t, trust);
    for (let i = 0; i < LIMIT; i++) assertError(await guess('203.0.113.7'), 401, 'unauthorized');
    assertError(await guess('203.0.113.7'), 429, 'rate_limited', /failed authentications/);
    // Another client behind the same balancer is not limited by the first.
    assertError(await guess('203.0.113.8'), 401, 'unauthorized');
    // The balancer appends the address it saw: the client's own claims to the left are not believed.
    assertError(await guess('198.51.100.1, 203.0.113.7'), 429, 'rate_limited');
    const clients = requestLines(lines).map((entry) => entry.client);
    assert.deepEqual(clients.slice(0, 5), ['203.0.113.7', '203.0.113.7', '203.0.113.7', '203.0.113.7', '203.0.113.8']);
  });
}

test('unset, or a proxy that is not trusted: X-Forwarded-For is ignored and the socket address counts', async (t) => {
  for (const trust of [undefined, '10.0.0.0/8']) {
    const { lines, guess } = await service(t, trust);
    for (let i = 0; i < LIMIT; i++) assertError(await guess(`203.0.113.${i}`), 401, 'unauthorized');
    // A new forwarded address each time changes nothing: the limit is the socket's.
    assertError(await guess('203.0.113.99'), 429, 'rate_limited');
    assert.ok(requestLines(lines).every((entry) => entry.client === '127.0.0.1'));
  }
});

test('HERALD_TRUST_PROXY accepts a hop count or addresses and ranges, and nothing else', () => {
  const base = { HERALD_SECRET_KEY: 'k'.repeat(40), HERALD_DATA_DIR: '/tmp/herald-config-test' };
  assert.equal(loadConfig(base).trustProxy, false);
  assert.equal(loadConfig({ ...base, HERALD_TRUST_PROXY: '2' }).trustProxy, 2);
  assert.deepEqual(loadConfig({ ...base, HERALD_TRUST_PROXY: '10.0.0.0/8, ::1' }).trustProxy, ['10.0.0.0/8', '::1']);
  for (const bad of ['true', '0', 'lb.internal', '10.0.0.0/99']) {
    assert.throws(
      () => loadConfig({ ...base, HERALD_TRUST_PROXY: bad }),
      (error: Error) => error instanceof ConfigError && /HERALD_TRUST_PROXY/.test(error.message),
      bad,
    );
  }
});
