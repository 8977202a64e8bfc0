import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { setup, startReceiver } from '../../support/delivery.js';
import { eventually } from '../../support/receiver.js';
import { assertError } from '../../support/api.js';
import { ConfigError, loadConfig } from '../../../src/config.js';

// HERALD_TEST_NETWORK=public holds Test endpoints to public addresses, as Live ones are (http stays
// allowed): checked when an endpoint is made or changed, and again when its deliveries connect. Only
// loopback addresses are contacted here.

/** A raw TCP listener on 127.0.0.1 that counts connections. */
async function trap(t: TestContext): Promise<{ port: number; connections: number }> {
  const state = { port: 0, connections: 0 };
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    state.connections++;
    sockets.add(socket);
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.port = (server.address() as { port: number }).port;
  t.after(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return state;
}

test('HERALD_TEST_NETWORK defaults to private in development mode and to public in production mode', () => {
  const base = { HERALD_SECRET_KEY: 'k'.repeat(40), HERALD_DATA_DIR: '/tmp/herald-config-test' };
  assert.equal(loadConfig(base).testNetwork, 'private');
  assert.equal(loadConfig({ ...base, HERALD_MODE: 'production' }).testNetwork, 'public');
  assert.equal(
    loadConfig({ ...base, HERALD_MODE: 'production', HERALD_TEST_NETWORK: 'private' }).testNetwork,
    'private',
  );
  assert.equal(loadConfig({ ...base, HERALD_TEST_NETWORK: 'public' }).testNetwork, 'public');
  assert.throws(
    () => loadConfig({ ...base, HERALD_TEST_NETWORK: 'lan' }),
    (error: unknown) =>
      error instanceof ConfigError && /HERALD_TEST_NETWORK=lan must be one of private, public/.test(error.message),
  );
});

test('under HERALD_TEST_NETWORK=public a Test endpoint at a local or private address is refused, and one whose name resolves to loopback gets no connection', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s', HERALD_TEST_NETWORK: 'public' });
  const target = await trap(t);
  const p = target.port;
  for (const url of [
    `http://127.0.0.1:${p}/`,
    `http://localhost:${p}/`,
    `http://localhost.:${p}/`,
    `http://[::1]:${p}/`,
    `http://2130706433:${p}/`,
    'http://10.1.2.3/',
    'http://192.168.0.1/',
  ]) {
    assertError(
      await s.api.post('/api/v1/endpoints', { app_id: s.appId, url }),
      400,
      'invalid_request',
      /HERALD_TEST_NETWORK=public/,
    );
  }
  // A public host is accepted over http (deleted at once: tests contact loopback addresses only).
  const publicOne = await s.api.post('/api/v1/endpoints', { app_id: s.appId, url: 'http://8.8.8.8/hooks' });
  assert.equal(publicOne.status, 201);
  const made = publicOne.body.id as string;
  // A change to a loopback URL is refused too.
  assertError(
    await s.api.patch(`/api/v1/endpoints/${made}`, { url: `http://127.0.0.1:${p}/` }),
    400,
    'invalid_request',
    /HERALD_TEST_NETWORK=public/,
  );
  assert.equal((await s.api.delete(`/api/v1/endpoints/${made}`)).status, 204);

  // URLs that reach loopback only when they connect (a name's DNS answer, or a row changed in the store)
  // get no connection: the attempt fails with the guard's error.
  const scope = { orgId: s.orgId, livemode: false };
  const urls = [`http://localhost:${p}/a`, `http://127.0.0.1:${p}/b`];
  for (const url of urls) await s.service.store.endpoints.create(scope, { appId: s.appId, url });
  const emitted = await s.emit();
  assert.equal(emitted.deliveryIds.length, urls.length);
  for (const id of emitted.deliveryIds) {
    const d = await s.until(id, (read) => read.status !== 'pending', 'a failed attempt');
    assert.equal(d.status, 'failed');
    assert.match(d.attempts[0]!.error!, /refused to connect.*non-public/);
    assert.match(d.attempts[0]!.error!, /HERALD_TEST_NETWORK=public/);
  }
  assert.equal(target.connections, 0);
});

test('under HERALD_TEST_NETWORK=public the operator allow-list (HERALD_SSRF_ALLOW) still lets Test endpoints reach what it lists', async (t) => {
  const s = await setup(t, { HERALD_TEST_NETWORK: 'public', HERALD_SSRF_ALLOW: '127.0.0.1' });
  const receiver = await startReceiver(t);
  const port = new URL(receiver.url).port;
  await s.endpoint(`http://127.0.0.1:${port}/allowed`);
  assertError(
    await s.api.post('/api/v1/endpoints', { app_id: s.appId, url: `http://localhost:${port}/` }),
    400,
    'invalid_request',
    /HERALD_TEST_NETWORK=public/,
  );
  await s.emit();
  await receiver.waitFor(1);
  assert.equal(receiver.received[0]!.path, '/allowed');
});

test('in development mode (HERALD_TEST_NETWORK private by default) Test endpoints still reach loopback', async (t) => {
  const s = await setup(t);
  assert.equal(s.service.config.testNetwork, 'private');
  const receiver = await startReceiver(t);
  await s.endpoint(`http://localhost:${new URL(receiver.url).port}/dev`);
  await s.emit();
  await eventually(async () => receiver.received.find((r) => r.path === '/dev'));
});
