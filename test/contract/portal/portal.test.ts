import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService } from '../../support/service.js';
import { bootstrap, Client } from '../../support/client.js';
import { Receiver, eventually } from '../../support/receiver.js';
import {
  api,
  appWithEndpoint,
  appWithEndpoints,
  liveApi,
  receiver,
  service,
  setUpPortalWorld,
} from '../../support/portal-world.js';

// The customer portal behind portal_path: one application's endpoints, messages and deliveries, and the
// actions a customer may take, all limited to that one application by its token. Its pages in headless
// Chromium: test/browser/portal/portal.test.ts.

setUpPortalWorld();

test('the portal page opens for a valid token and is 404 for any other', async () => {
  const { app } = await appWithEndpoint('page');
  const page = await fetch(service.url + app.portal_path);
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type') ?? '', /text\/html/);
  assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
  assert.match(await page.text(), /Webhooks for <span id="app-name">page<\/span>/);

  // A bad link reads one way whatever its token's length: a page for a browser, the error envelope for a
  // client, on the page and on its routes.
  for (const token of ['abc', 'x'.repeat(43), 'y'.repeat(300), app.portal_path.split('/').pop()!.slice(0, -1)]) {
    const shown = await fetch(`${service.url}/portal/${token}`, { headers: { accept: 'text/html,*/*;q=0.8' } });
    assert.equal(shown.status, 404, token);
    assert.match(shown.headers.get('content-type') ?? '', /text\/html/, token);
    assert.match(await shown.text(), /This portal link is not valid/, token);
    const asked = await new Client(service.url).get(`/portal/${token}`);
    assert.equal(asked.status, 404, token);
    assert.deepEqual(Object.keys(asked.body), ['error'], token);
    assert.equal(asked.body.error.code, 'not_found', token);
    const api = await new Client(`${service.url}/portal/${token}`).get('/api/endpoints');
    assert.equal(api.status, 404, token);
    assert.equal(api.body.error.code, 'not_found', token);
  }
});

test('a new portal_path ends the previous link at once; other links and other environments are untouched', async () => {
  const { app, portal: old } = await appWithEndpoint('rotated');
  const { portal: neighbour } = await appWithEndpoint('neighbour');
  assert.equal((await old.get('/api/endpoints')).status, 200);

  const rotated = await api.post(`/api/v1/applications/${app.id}/rotate-portal-path`);
  assert.equal(rotated.status, 200);
  assert.equal(rotated.body.id, app.id);
  assert.match(rotated.body.portal_path, /^\/portal\/[A-Za-z0-9]{32,}$/);
  assert.notEqual(rotated.body.portal_path, app.portal_path);

  assert.equal((await fetch(service.url + app.portal_path)).status, 404, 'the old page');
  assert.equal((await old.get('/api/endpoints')).status, 404, "the old link's routes");
  const fresh = new Client(service.url + rotated.body.portal_path);
  const endpoints = await fresh.get('/api/endpoints');
  assert.equal(endpoints.status, 200);
  assert.equal(endpoints.body.data.length, 1, "the new link opens the same application's data");
  assert.equal((await fetch(service.url + rotated.body.portal_path)).status, 200);
  assert.equal((await api.get(`/api/v1/applications/${app.id}`)).body.portal_path, undefined, 'shown once');
  assert.equal((await neighbour.get('/api/endpoints')).status, 200, "another application's link");

  // A Live key does not see a Test application; an unknown one is 404.
  assert.equal((await liveApi.post(`/api/v1/applications/${app.id}/rotate-portal-path`)).status, 404);
  assert.equal((await fresh.get('/api/endpoints')).status, 200, 'the Live attempt changed nothing');
  assert.equal((await api.post('/api/v1/applications/app_doesnotexist/rotate-portal-path')).status, 404);
});

test('a portal link opens with a trailing slash too, and its token never reaches the log', async (t) => {
  const lines: string[] = [];
  const logged = await startTestService({}, undefined, lines);
  t.after(() => logged.stop());
  const { test: client } = await bootstrap(logged.url);
  const app = (await client.post('/api/v1/applications', { name: 'logged' })).body;
  const token = app.portal_path.split('/').pop() as string;
  assert.equal((await fetch(`${logged.url}${app.portal_path}/`)).status, 200);
  const portal = new Client(logged.url + app.portal_path);
  assert.equal((await portal.get('/api/endpoints/')).status, 200);
  assert.equal((await portal.get('/api/endpoints')).status, 200);
  // Also spelled so that a plain match on the raw URL would miss it: the router decodes %70 to p.
  assert.equal((await fetch(`${logged.url}/%70ortal/${token}/api/endpoints`)).status, 200);
  await eventually(
    async () => lines.filter((line) => line.includes('/portal/:token')).length >= 4,
    5_000,
    'the request lines',
  );
  assert.deepEqual(
    lines.filter((line) => line.includes(token)),
    [],
    'lines with the token',
  );
});

test("a portal token reaches its own application's data and nothing else", async () => {
  const a = await appWithEndpoint('alpha');
  const b = await appWithEndpoint('beta');

  const endpoints = await a.portal.get('/api/endpoints');
  assert.equal(endpoints.status, 200);
  assert.deepEqual(
    endpoints.body.data.map((e: { id: string }) => e.id),
    [a.endpoint.id],
  );

  // b's endpoint through a's portal: not found, and unchanged.
  assert.equal((await a.portal.patch(`/api/endpoints/${b.endpoint.id}`, { status: 'disabled' })).status, 404);
  assert.equal((await a.portal.post(`/api/endpoints/${b.endpoint.id}/rotate-secret`)).status, 404);
  assert.equal((await api.get(`/api/v1/endpoints/${b.endpoint.id}`)).body.status, 'active');

  const emitted = await api.post('/api/v1/messages', {
    app_id: b.app.id,
    event_type: 'invoice.paid',
    payload: { n: 1 },
  });
  assert.equal(emitted.status, 201);
  assert.deepEqual((await a.portal.get('/api/messages')).body.data, []);
  assert.equal((await a.portal.get(`/api/messages/${emitted.body.id}/deliveries`)).status, 404);
  assert.equal((await a.portal.post(`/api/deliveries/${emitted.body.delivery_ids[0]}/retry`)).status, 404);
  const own = await b.portal.get('/api/messages');
  assert.deepEqual(
    own.body.data.map((m: { id: string }) => m.id),
    [emitted.body.id],
  );
});

test('customers add and disable endpoints, rotate a secret, send a test event and retry from the portal', async () => {
  const { app, portal } = await appWithEndpoint('gamma');

  const added = await portal.post('/api/endpoints', {
    url: `${receiver.url}/gamma-added`,
    event_types: ['invoice.paid'],
  });
  assert.equal(added.status, 201);
  assert.match(added.body.signing_secret, /^whsec_/);
  const listed = await api.get(`/api/v1/endpoints?app_id=${app.id}`);
  assert.equal(listed.body.data.length, 2);

  const bad = await portal.post('/api/endpoints', { url: 'ftp://example.com' });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.code, 'invalid_request');

  const rotated = await portal.post(`/api/endpoints/${added.body.id}/rotate-secret`);
  assert.equal(rotated.status, 200);
  assert.notEqual(rotated.body.signing_secret, added.body.signing_secret);
  // What a customer changes in the portal is in the audit log, by the portal of its application.
  const history = (await api.get(`/api/v1/audit-log?resource_id=${added.body.id}`)).body.data;
  assert.deepEqual(
    history.map((entry: any) => [entry.action, entry.actor]),
    [
      ['endpoint.secret_rotated', { type: 'portal', id: app.id }],
      ['endpoint.created', { type: 'portal', id: app.id }],
    ],
  );

  const before = receiver.received.length;
  const sent = await portal.post('/api/send-test', { event_type: 'invoice.paid' });
  assert.equal(sent.status, 202);
  assert.equal(sent.body.delivery_ids.length, 2);
  await receiver.waitFor(before + 2);

  const deliveries = await eventually(
    async () => {
      const reply = await portal.get(`/api/messages/${sent.body.id}/deliveries`);
      return reply.body.data.every((d: { status: string }) => d.status === 'success') ? reply.body.data : null;
    },
    10_000,
    'test event delivered',
  );
  assert.equal(deliveries[0].attempts.length, 1);

  const retried = await portal.post(`/api/deliveries/${deliveries[0].id}/retry`);
  assert.equal(retried.status, 200);
  assert.equal(retried.body.attempt_number, 2);

  const disabled = await portal.patch(`/api/endpoints/${added.body.id}`, { status: 'disabled' });
  assert.equal(disabled.body.status, 'disabled');
  assert.equal((await api.get(`/api/v1/endpoints/${added.body.id}`)).body.status, 'disabled');
});

test('a Live application portal never sends test events', async () => {
  const app = (await liveApi.post('/api/v1/applications', { name: 'live-app' })).body;
  const portal = new Client(service.url + app.portal_path);
  const reply = await portal.post('/api/send-test', {});
  assert.equal(reply.status, 403);
  assert.equal(reply.body.error.code, 'test_mode_only');
  assert.equal((await portal.get('/api/app')).body.livemode, true);
});

test("a message's deliveries come in bounded pages, each attempt without the receiver's answer", async () => {
  const app = (await api.post('/api/v1/applications', { name: 'many' })).body;
  // The receiver answers 500 with a long body of control characters (each escaped six-fold in JSON).
  const noisy = await new Receiver().start();
  noisy.respond = () => ({ status: 500, body: '\u0001'.repeat(4_000) });
  try {
    for (let i = 0; i < 30; i++)
      assert.equal((await api.post('/api/v1/endpoints', { app_id: app.id, url: `${noisy.url}/e${i}` })).status, 201);
    const emitted = await api.post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid', payload: {} });
    await noisy.waitFor(30, 20_000);
    const portal = new Client(service.url + app.portal_path);
    const first = await eventually(
      async () => {
        const reply = await portal.get(`/api/messages/${emitted.body.id}/deliveries`);
        return reply.body.data.every((d: { attempts: unknown[] }) => d.attempts.length > 0) ? reply : null;
      },
      20_000,
      'attempts recorded',
    );
    assert.equal(first.body.data.length, 25);
    assert.equal(first.body.has_more, true);
    const second = await portal.get(`/api/messages/${emitted.body.id}/deliveries?cursor=${first.body.next_cursor}`);
    assert.equal(second.status, 200);
    assert.equal(second.body.data.length, 5);
    assert.equal(second.body.has_more, false);
    const ids = [...first.body.data, ...second.body.data].map((d: { id: string }) => d.id);
    assert.equal(new Set(ids).size, 30, 'every delivery once across the pages');
    for (const delivery of [...first.body.data, ...second.body.data]) {
      assert.ok(delivery.attempts.length <= 5);
      for (const attempt of delivery.attempts) {
        assert.equal(attempt.response_status, 500);
        assert.ok(!('response_body' in attempt), 'no response body in a list');
      }
    }
    assert.ok(JSON.stringify(first.body).length < 50_000, 'the page stays small');
    const badCursor = await portal.get(`/api/messages/${emitted.body.id}/deliveries?cursor=msg_nope`);
    assert.equal(badCursor.status, 400);
  } finally {
    await noisy.stop();
  }
});

test("the portal reads its own messages' payloads and one delivery's attempts with the receiver's answers; 404 for another application's", async () => {
  const a = await appWithEndpoint('answers-a');
  const b = await appWithEndpoint('answers-b');
  receiver.respond = (request) =>
    request.path === '/answers-a' ? { status: 500, body: 'a says no' } : { status: 200, body: 'ok' };
  try {
    const before = receiver.received.length;
    const emitted = await api.post('/api/v1/messages', {
      app_id: a.app.id,
      event_type: 'invoice.paid',
      payload: { amount: 42 },
    });
    const other = await api.post('/api/v1/messages', { app_id: b.app.id, event_type: 'invoice.paid', payload: {} });
    await receiver.waitFor(before + 2);
    const deliveryId = emitted.body.delivery_ids[0] as string;

    const payload = await a.portal.get(`/api/messages/${emitted.body.id}/payload`);
    assert.equal(payload.status, 200);
    assert.equal(payload.headers.get('cache-control'), 'no-store');
    assert.deepEqual(payload.body.payload, { amount: 42 });
    assert.equal(payload.body.event_type, 'invoice.paid');

    const delivery = await eventually(
      async () => {
        const reply = await a.portal.get(`/api/deliveries/${deliveryId}`);
        return reply.body.attempts?.length > 0 ? reply : null;
      },
      10_000,
      'the attempt recorded',
    );
    assert.equal(delivery.body.id, deliveryId);
    assert.equal(delivery.body.event_type, 'invoice.paid');
    assert.equal(delivery.body.attempts[0].response_status, 500);
    assert.equal(delivery.body.attempts[0].response_body, 'a says no');

    // Another application's message or delivery, through this link: 404, like an unknown one.
    assert.equal((await a.portal.get(`/api/messages/${other.body.id}/payload`)).status, 404);
    assert.equal((await a.portal.get(`/api/deliveries/${other.body.delivery_ids[0]}`)).status, 404);
    assert.equal((await b.portal.get(`/api/deliveries/${deliveryId}`)).status, 404);
    assert.equal((await a.portal.get('/api/deliveries/dlv_doesnotexist')).status, 404);

    // A payload no longer stored is 410.
    await service.store.ctx.db.deleteFrom('payloads').where('message_id', '=', emitted.body.id).execute();
    const gone = await a.portal.get(`/api/messages/${emitted.body.id}/payload`);
    assert.equal(gone.status, 410);
    assert.equal(gone.body.error.code, 'payload_gone');
  } finally {
    receiver.respond = () => ({ status: 200, body: 'ok' });
  }
});

test('the portal lists its messages 50 a page, newest first; cursor reads the next', async () => {
  const { app, portal } = await appWithEndpoint('paged-messages');
  const ids: string[] = [];
  for (let i = 0; i < 52; i++)
    ids.push(
      (await api.post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid', payload: { i } })).body.id,
    );
  await assertTwoPages(portal, '/api/messages', [...ids].reverse(), 'dlv_nope');
});

/**
 * A portal list of 50 a page holds `expected` in that order over two pages, the cursor reading the second;
 * a cursor of another kind of id is 400.
 */
async function assertTwoPages(portal: Client, path: string, expected: string[], foreignCursor: string) {
  const first = await portal.get(path);
  assert.equal(first.body.data.length, 50);
  assert.equal(first.body.has_more, true);
  const second = await portal.get(`${path}?cursor=${first.body.next_cursor}`);
  assert.equal(second.status, 200);
  assert.equal(second.body.has_more, false);
  assert.deepEqual(
    [...first.body.data, ...second.body.data].map((item: { id: string }) => item.id),
    expected,
  );
  assert.equal((await portal.get(`${path}?cursor=${foreignCursor}`)).status, 400);
}

test('the portal lists its endpoints 50 a page, newest first; cursor reads the next', async () => {
  const { portal, ids } = await appWithEndpoints('paged-endpoints', 51);
  await assertTwoPages(portal, '/api/endpoints', [...ids].reverse(), 'evt_nope');
});

test("the portal's stats of its own endpoints: attempts per hour as the API counts them, 404 for another application's", async () => {
  const a = await appWithEndpoint('stats-a');
  const b = await appWithEndpoint('stats-b');
  const before = receiver.received.length;
  for (let n = 0; n < 3; n++)
    assert.equal(
      (await api.post('/api/v1/messages', { app_id: a.app.id, event_type: 'invoice.paid', payload: { n } })).status,
      201,
    );
  await receiver.waitFor(before + 3);
  const stats = await eventually(
    async () => {
      const reply = await a.portal.get(`/api/endpoints/${a.endpoint.id}/stats`);
      return reply.body.totals?.success === 3 ? reply : null;
    },
    10_000,
    'the attempts counted',
  );
  assert.equal(stats.status, 200);
  assert.equal(stats.headers.get('cache-control'), 'no-store');
  assert.equal(stats.body.object, 'endpoint_stats');
  assert.equal(stats.body.buckets.length, 24);
  assert.deepEqual(
    stats.body,
    (await api.get(`/api/v1/endpoints/${a.endpoint.id}/stats?since=${stats.body.since}&until=${stats.body.until}`))
      .body,
  );

  // Another application's endpoint, through this link: 404, like an unknown one; a bad window: 400.
  const other = await a.portal.get(`/api/endpoints/${b.endpoint.id}/stats`);
  assert.equal(other.status, 404);
  assert.equal(other.body.error.code, 'not_found');
  assert.equal((await a.portal.get('/api/endpoints/ep_doesnotexist/stats')).status, 404);
  const reversed = await a.portal.get(
    `/api/endpoints/${a.endpoint.id}/stats?since=${new Date().toISOString()}&until=${new Date(Date.now() - 1000).toISOString()}`,
  );
  assert.equal(reversed.status, 400);
  assert.equal(reversed.body.error.code, 'invalid_request');
  assert.equal((await b.portal.get(`/api/endpoints/${b.endpoint.id}/stats`)).body.totals.success, 0);
});

test("a customer sets an endpoint's content filter in the portal: tried first, saved, refused when out of bounds", async () => {
  const { app, endpoint, portal } = await appWithEndpoint('filtered');
  const other = await appWithEndpoint('filtered-other');
  const draft = { 'data.amount': { $gte: 100 } };
  const tried = async (payload: object, filter?: object | null) =>
    (await portal.post(`/api/endpoints/${endpoint.id}/filter-test`, { payload, event_type: 'invoice.paid', filter }))
      .body.matches;
  assert.equal(await tried({ amount: 5 }, draft), false, 'a draft is tried');
  assert.equal(await tried({ amount: 500 }, draft), true);
  assert.equal(await tried({ amount: 5 }), true, 'no filter saved yet: every message');
  const refused = await portal.post(`/api/endpoints/${endpoint.id}/filter-test`, {
    payload: {},
    filter: { $where: 'true' },
  });
  assert.equal(refused.status, 400);
  assert.match(refused.body.error.message, /\$where is not supported/);
  assert.equal((await portal.post(`/api/endpoints/${other.endpoint.id}/filter-test`, { payload: {} })).status, 404);

  const saved = await portal.patch(`/api/endpoints/${endpoint.id}`, { filter: draft });
  assert.equal(saved.status, 200, JSON.stringify(saved.body));
  assert.deepEqual(saved.body.filter, draft);
  assert.equal((await portal.patch(`/api/endpoints/${endpoint.id}`, { filter: { $where: 'x' } })).status, 400);
  assert.deepEqual(
    (await api.get(`/api/v1/endpoints/${endpoint.id}`)).body.filter,
    draft,
    'the refused one is not saved',
  );
  assert.equal(await tried({ amount: 5 }), false, 'the saved filter decides');
  // The fan-out obeys it: only the matching message makes a delivery.
  const small = await api.post('/api/v1/messages', {
    app_id: app.id,
    event_type: 'invoice.paid',
    payload: { amount: 5 },
  });
  const large = await api.post('/api/v1/messages', {
    app_id: app.id,
    event_type: 'invoice.paid',
    payload: { amount: 500 },
  });
  assert.deepEqual([small.body.delivery_ids.length, large.body.delivery_ids.length], [0, 1]);
  const added = await portal.post('/api/endpoints', { url: `${receiver.url}/filtered-added`, filter: { type: 'x' } });
  assert.equal(added.status, 201);
  assert.deepEqual(added.body.filter, { type: 'x' });
});
