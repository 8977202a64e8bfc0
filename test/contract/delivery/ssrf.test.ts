import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { closedPort, setup, startReceiver, verifies } from '../../support/delivery.js';
import { Client } from '../../support/client.js';
import { eventually } from '../../support/receiver.js';
import { assertError } from '../../support/api.js';

// Live endpoints may only reach public addresses, checked before connecting (a name by what its DNS
// lookup returns) and again on the connected socket, so a URL that passed the API check and then
// resolves, or is changed in the database, to a loopback address gets nothing, not even a connection
// (which would tell an open port from a closed one). Only loopback addresses are contacted here.

/** A raw TCP listener on 127.0.0.1 and ::1 (same port) that records connections and any byte sent. */
async function trap(t: TestContext): Promise<{ port: number; connections: number; bytes: number }> {
  const state = { port: 0, connections: 0, bytes: 0 };
  const sockets = new Set<Socket>();
  const onConnection = (socket: Socket) => {
    state.connections++;
    sockets.add(socket);
    socket.on('data', (chunk) => (state.bytes += chunk.length));
    socket.on('error', () => {});
  };
  const servers: Server[] = [createServer(onConnection)];
  await new Promise<void>((resolve) => servers[0]!.listen(0, '127.0.0.1', resolve));
  state.port = (servers[0]!.address() as { port: number }).port;
  const v6 = createServer(onConnection);
  await new Promise<void>((resolve) =>
    v6.once('error', () => resolve()).listen(state.port, '::1', () => (servers.push(v6), resolve())),
  );
  t.after(async () => {
    for (const socket of sockets) socket.destroy();
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  });
  return state;
}

test('Live endpoints that reach a loopback address at connect time are refused, in every spelling, without connecting', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s' });
  const target = await trap(t);
  const p = target.port;
  const spellings = [
    `http://127.0.0.1:${p}/`,
    `http://localhost:${p}/`,
    `http://[::1]:${p}/`,
    `http://[::ffff:127.0.0.1]:${p}/`,
    `http://2130706433:${p}/`,
    `http://0x7f000001:${p}/`,
    `https://127.0.0.1:${p}/`,
    `https://localhost:${p}/`,
  ];
  const closed = await closedPort();
  // The API refuses these hosts for Live endpoints …
  for (const url of spellings) {
    const reply = await s.live.post('/api/v1/endpoints', { app_id: s.liveAppId, url: url.replace('http:', 'https:') });
    assert.equal(reply.status, 400, `API must refuse ${url}`);
    assert.equal(reply.body.error.code, 'invalid_request');
  }
  // … so they are written straight into the store, as DNS rebinding or a later change would leave them.
  const scope = { orgId: s.orgId, livemode: true };
  const urlOf = new Map<string, string>();
  for (const url of spellings)
    urlOf.set((await s.service.store.endpoints.create(scope, { appId: s.liveAppId, url })).row.id, url);
  // A closed port answers exactly as an open one: nothing tells them apart.
  for (const url of [`https://localhost:${closed}/`, `https://127.0.0.1:${closed}/`]) {
    urlOf.set((await s.service.store.endpoints.create(scope, { appId: s.liveAppId, url })).row.id, url);
  }

  const emitted = await s.live.post('/api/v1/messages', {
    app_id: s.liveAppId,
    event_type: 'invoice.paid',
    payload: { secret: 'metadata' },
  });
  assert.equal(emitted.status, 201);
  assert.equal(emitted.body.delivery_ids.length, urlOf.size);
  for (const id of emitted.body.delivery_ids as string[]) {
    const d = await (async () => {
      for (;;) {
        const reply = await s.live.get(`/api/v1/deliveries/${id}`);
        if (reply.body.status !== 'pending') return reply.body;
        await new Promise((r) => setTimeout(r, 25));
      }
    })();
    const url = urlOf.get(d.endpoint_id);
    assert.equal(d.status, 'failed', url);
    assert.equal(d.attempts[0].response_status, null);
    assert.match(d.attempts[0].error, /non-public \(private or reserved\) address/, `${url}: ${d.attempts[0].error}`);
    // A name's error does not give away what it resolves to.
    if (url!.includes('localhost'))
      assert.match(
        d.attempts[0].error,
        /^refused to connect: localhost resolves only to non-public .* addresses /,
        d.attempts[0].error,
      );
  }
  assert.equal(target.connections, 0, 'no connection (not even a TCP handshake) reached the loopback listener');
  assert.equal(target.bytes, 0);
});

test('the operator allow-list (HERALD_SSRF_ALLOW) lets Live endpoints reach the listed address only', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s', HERALD_SSRF_ALLOW: '127.0.0.1' });
  const receiver = await startReceiver(t);
  const target = await trap(t);
  const created = await s.live.post('/api/v1/endpoints', {
    app_id: s.liveAppId,
    url: `https://127.0.0.1:${target.port}/`,
  });
  assert.equal(created.status, 201, 'allow-listed address accepted by the API');
  await s.live.patch(`/api/v1/endpoints/${created.body.id}`, { status: 'disabled' });

  const scope = { orgId: s.orgId, livemode: true };
  const allowed = await s.service.store.endpoints.create(scope, { appId: s.liveAppId, url: `${receiver.url}/live` });
  const other = await s.service.store.endpoints.create(scope, {
    appId: s.liveAppId,
    url: `http://[::1]:${target.port}/`,
  });
  const emitted = await s.live.post('/api/v1/messages', {
    app_id: s.liveAppId,
    event_type: 'invoice.paid',
    payload: { live: true },
  });
  await receiver.waitFor(1);
  assert.equal(receiver.received[0]!.path, '/live');
  assert.ok(verifies(receiver.received[0]!, allowed.secret));
  const deliveries = await s.live.get(`/api/v1/messages/${emitted.body.id}/deliveries`);
  const toOther = deliveries.body.data.find((d: { endpoint_id: string }) => d.endpoint_id === other.row.id);
  for (;;) {
    const read = await s.live.get(`/api/v1/deliveries/${toOther.id}`);
    if (read.body.status !== 'pending') {
      assert.match(read.body.attempts[0].error, /non-public \(private or reserved\) address ::1/);
      break;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.equal(target.bytes, 0);
});

test('Test endpoints made through the API may reach localhost, not link-local addresses; those a portal customer adds reach public addresses only', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s' });
  const receiver = await startReceiver(t);
  const port = new URL(receiver.url).port;
  await s.endpoint(`http://localhost:${port}/test`);
  await s.emit();
  await receiver.waitFor(1);
  assert.equal(receiver.received[0]!.path, '/test');

  // portal_path is shown at create and rotate only: a new one opens the application's portal.
  const app = (await s.api.post(`/api/v1/applications/${s.appId}/rotate-portal-path`)).body;
  const portal = new Client(s.service.url + app.portal_path);
  for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://[fd00:ec2::254]/']) {
    assertError(await s.api.post('/api/v1/endpoints', { app_id: s.appId, url }), 400, 'invalid_request', /link-local/);
    assertError(await portal.post('/api/endpoints', { url }), 400, 'invalid_request', /link-local|non-public/);
  }
  // A portal customer's receiver is not on the operator's network: the portal refuses local and private
  // hosts in Test too (http stays allowed there), and a public one is accepted.
  for (const url of [`http://localhost:${port}/`, `http://127.0.0.1:${port}/`, 'http://10.1.2.3/', 'http://[::1]/']) {
    assertError(await portal.post('/api/endpoints', { url }), 400, 'invalid_request', /customer portal/);
  }
  // (Deleted at once: tests contact loopback addresses only.)
  const publicOne = await portal.post('/api/endpoints', { url: 'http://8.8.8.8/hooks' });
  assert.equal(publicOne.status, 201);
  assert.equal((await s.api.delete(`/api/v1/endpoints/${publicOne.body.id}`)).status, 204);

  // A name that resolves to loopback passes the check when the endpoint is made, and is refused when its
  // deliveries connect, with no connection made.
  const target = await trap(t);
  const portalMade = (
    await s.service.store.endpoints.create(
      { orgId: s.orgId, livemode: false },
      { appId: s.appId, url: `http://localhost:${target.port}/p`, publicOnly: true },
    )
  ).row;
  // A change that keeps the URL keeps its rule, also when it sends the same URL back (a whole-form save).
  assert.equal(
    (await s.api.patch(`/api/v1/endpoints/${portalMade.id}`, { url: portalMade.url, event_types: ['invoice.paid'] }))
      .status,
    200,
  );
  const emitted = await s.emit();
  const toPortalMade = async () => {
    const deliveries = (await s.api.get(`/api/v1/messages/${emitted.id}/deliveries`)).body.data as {
      id: string;
      endpoint_id: string;
    }[];
    return deliveries.find((d) => d.endpoint_id === portalMade.id)!.id;
  };
  const refused = await eventually(async () => {
    const read = (await s.api.get(`/api/v1/deliveries/${await toPortalMade()}`)).body;
    return read.status === 'pending' ? undefined : read;
  });
  assert.equal(refused.status, 'failed');
  assert.match(refused.attempts[0].error, /localhost resolves only to non-public/);
  assert.equal(target.connections, 0);

  // The operator's team may point it at its own network again: a URL set through the API takes the API's rule.
  assert.equal((await s.api.patch(`/api/v1/endpoints/${portalMade.id}`, { url: `${receiver.url}/moved` })).status, 200);
  const again = await s.emit();
  await eventually(async () =>
    receiver.received.find((r) => r.path === '/moved' && r.headers['webhook-id'] === again.id),
  );
});

test('endpoint URLs with a user name or password are refused (they would be shown on every read, and were never sent)', async (t) => {
  const s = await setup(t);
  for (const url of ['http://user:secret@localhost:9/', 'http://user@localhost:9/', 'http://:pw@localhost:9/']) {
    assertError(
      await s.api.post('/api/v1/endpoints', { app_id: s.appId, url }),
      400,
      'invalid_request',
      /user name or password/,
    );
  }
  const created = await s.endpoint('http://localhost:9/');
  assertError(
    await s.api.patch(`/api/v1/endpoints/${created.id}`, { url: 'http://a:b@localhost:9/' }),
    400,
    'invalid_request',
    /user name or password/,
  );
  assert.equal((await s.api.get(`/api/v1/endpoints/${created.id}`)).body.url, 'http://localhost:9/');
});
