import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, startReceiver, verifies } from '../../support/delivery.js';
import { ForwardProxy } from '../../support/forward-proxy.js';
import { loadConfig, ConfigError } from '../../../src/config.js';

// HERALD_OUTBOUND_PROXY: every delivery leaves through a real forward proxy on loopback (the npm `proxy`
// server, which logs what passes); HERALD_NO_PROXY hosts go direct; the address rule is applied before a
// request leaves; a proxy that is down or refuses is a recorded, retried failure.

const CREDENTIALS = { user: 'herald', password: 'pr0xy-pa55word' };

async function proxyFor(t: { after: (fn: () => Promise<void>) => void }, credentials = CREDENTIALS) {
  const proxy = await new ForwardProxy(credentials).start();
  t.after(() => proxy.stop());
  return proxy;
}

test('an http receiver is reached through the proxy (absolute-form, with the proxy credentials); HERALD_NO_PROXY hosts go direct', async (t) => {
  const proxy = await proxyFor(t);
  const s = await setup(t, { HERALD_OUTBOUND_PROXY: proxy.url, HERALD_NO_PROXY: 'localhost,10.0.0.0/8' });
  const receiver = await startReceiver(t);
  const port = new URL(receiver.url).port;
  const proxied = await s.endpoint(`http://127.0.0.1:${port}/through`);
  const direct = await s.endpoint(`http://localhost:${port}/direct`);
  await s.emit({ n: 1 });
  await receiver.waitFor(2);

  const through = receiver.received.find((r) => r.path === '/through')!;
  assert.match(String(through.headers.via), /proxy\//, 'the proxy forwarded it');
  assert.ok(verifies(through, proxied.secret), 'the signature still verifies');
  const entry = proxy.log.find((e) => e.target === `http://127.0.0.1:${port}/through`);
  assert.ok(entry, `the proxy logged the request: ${JSON.stringify(proxy.log)}`);
  assert.equal(entry.method, 'POST');
  assert.equal(
    entry.authorization,
    `Basic ${Buffer.from(`${CREDENTIALS.user}:${CREDENTIALS.password}`).toString('base64')}`,
  );
  // The proxy's credentials are for the proxy only.
  assert.equal(through.headers['proxy-authorization'], undefined);

  const bypassed = receiver.received.find((r) => r.path === '/direct')!;
  assert.equal(bypassed.headers.via, undefined, 'HERALD_NO_PROXY: went direct');
  assert.ok(verifies(bypassed, direct.secret));
  assert.ok(!proxy.log.some((e) => e.target.includes('/direct')));
});

test('an https receiver is reached through a CONNECT tunnel', async (t) => {
  const proxy = await proxyFor(t);
  const s = await setup(t, { HERALD_OUTBOUND_PROXY: proxy.url, HERALD_RETRY_SCHEDULE: '0s' });
  const receiver = await startReceiver(t);
  const port = new URL(receiver.url).port;
  // A plain-http listener answers the TLS hello with garbage: the tunnel is made, the TLS handshake fails.
  const { deliveryIds } = await (async () => {
    await s.endpoint(`https://127.0.0.1:${port}/tls`);
    return s.emit();
  })();
  const failed = await s.until(deliveryIds[0]!, (d) => d.status === 'failed', 'the TLS attempt failed');
  assert.ok(
    proxy.log.some((e) => e.method === 'CONNECT' && e.target === `127.0.0.1:${port}`),
    JSON.stringify(proxy.log),
  );
  assert.equal(failed.attempts[0]!.response_status, null);
  assert.doesNotMatch(failed.attempts[0]!.error ?? '', /egress proxy/, 'the proxy did its part; TLS failed');
});

test('the address rule is applied before a request leaves through the proxy', async (t) => {
  const proxy = await proxyFor(t);
  const s = await setup(t, { HERALD_OUTBOUND_PROXY: proxy.url, HERALD_RETRY_SCHEDULE: '0s' });
  const receiver = await startReceiver(t);
  const port = new URL(receiver.url).port;
  // As a customer portal makes it (public addresses only), written to the store as DNS rebinding or a later
  // change would leave it: a name that resolves to loopback.
  const scope = { orgId: s.orgId, livemode: false };
  await s.service.store.endpoints.create(scope, {
    appId: s.appId,
    url: `http://localhost:${port}/private`,
    publicOnly: true,
  });
  const { deliveryIds } = await s.emit();
  const refused = await s.until(deliveryIds[0]!, (d) => d.status === 'failed', 'refused');
  assert.match(
    refused.attempts[0]!.error ?? '',
    /^refused to send through the egress proxy: localhost resolves to non-public/,
  );
  assert.equal(proxy.log.length, 0, 'nothing reached the proxy');
  assert.equal(receiver.received.length, 0);
});

test('a proxy that is down gives recorded failures, retried, and a delivery once it is back; one that refuses is a recorded failure', async (t) => {
  const proxy = await proxyFor(t);
  const s = await setup(t, { HERALD_OUTBOUND_PROXY: proxy.url, HERALD_RETRY_SCHEDULE: '0s,1s,1s,1s,1s,1s' });
  const receiver = await startReceiver(t);
  await s.endpoint(`${receiver.url}/later`);
  await proxy.stop();
  const { deliveryIds } = await s.emit();
  const down = await s.until(deliveryIds[0]!, (d) => d.attempt_count >= 2, 'two failed attempts');
  for (const attempt of down.attempts) {
    assert.equal(attempt.status, 'failed');
    assert.equal(attempt.response_status, null);
    assert.match(attempt.error ?? '', /^egress proxy unreachable \(ECONNREFUSED\)/);
    assert.ok(!(attempt.error ?? '').includes(CREDENTIALS.password));
  }
  assert.equal(receiver.received.length, 0);
  await proxy.start();
  const delivered = await s.until(deliveryIds[0]!, (d) => d.status === 'success', 'delivered once the proxy is back');
  assert.equal(delivered.attempts[0]!.status, 'success');
  assert.equal(receiver.received.length, 1);

  // Wrong proxy credentials: the proxy answers 407 to a request and to a tunnel.
  const strict = await proxyFor(t, { user: 'herald', password: 'another-password' });
  const s2 = await setup(t, {
    HERALD_OUTBOUND_PROXY: `http://herald:wrong@127.0.0.1:${strict.port}`,
    HERALD_RETRY_SCHEDULE: '0s',
  });
  await s2.endpoint(`${receiver.url}/refused`);
  await s2.endpoint(`${receiver.url.replace('http:', 'https:')}/refused`);
  const emitted = await s2.emit();
  const errors = await Promise.all(
    emitted.deliveryIds.map(
      async (id) => (await s2.until(id, (d) => d.status === 'failed', 'refused by the proxy')).attempts[0]!.error,
    ),
  );
  assert.deepEqual(errors.sort(), [
    'egress proxy did not open the tunnel (HTTP 407)',
    'egress proxy refused the request (HTTP 407)',
  ]);
  assert.equal(receiver.received.length, 1, 'nothing more reached the receiver');
});

test('HERALD_OUTBOUND_PROXY and HERALD_NO_PROXY are checked at start-up, without echoing credentials', () => {
  const base = { HERALD_SECRET_KEY: 'k'.repeat(40), HERALD_DATA_DIR: '/tmp/herald-config-test' };
  for (const bad of ['https://proxy:3128', 'socks5://proxy:1080', 'proxy:3128', 'http://u:s3cr3t@proxy:3128/path']) {
    assert.throws(
      () => loadConfig({ ...base, HERALD_OUTBOUND_PROXY: bad }),
      (error: Error) =>
        error instanceof ConfigError &&
        /HERALD_OUTBOUND_PROXY/.test(error.message) &&
        !error.message.includes('s3cr3t'),
    );
  }
  const config = loadConfig({
    ...base,
    HERALD_OUTBOUND_PROXY: 'http://u:p@proxy.internal:3128',
    HERALD_NO_PROXY: '.corp.example, 10.0.0.0/8,Internal.Example.',
  });
  assert.equal(config.outboundProxy, 'http://u:p@proxy.internal:3128/');
  assert.deepEqual(config.noProxy, ['corp.example', '10.0.0.0/8', 'internal.example']);
  assert.throws(() => loadConfig({ ...base, HERALD_NO_PROXY: 'not a host' }), /HERALD_NO_PROXY entry not a host/);
});
