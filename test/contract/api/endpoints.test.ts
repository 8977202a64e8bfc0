import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, type Client } from '../../support/client.js';
import { assertError, createApp, createEndpoint, emit, idsOf, listAll } from '../../support/api.js';

const GRACE_MS = 2 * 60 * 60 * 1000;

// Endpoints: list, create, rotate-secret (api-v1.md), get/update/delete (additive).
describe('endpoints', () => {
  let service: TestService;
  let api: Client;
  let live: Client;

  before(async () => {
    service = await startTestService({ HERALD_ROLE: 'api', HERALD_SECRET_GRACE: '2h' });
    ({ test: api, live } = await bootstrap(service.url));
  });
  after(async () => service?.stop());

  test('create: 201 with whsec_ secret once, status active; list and get never show the secret', async () => {
    const app = await createApp(api);
    const reply = await api.post('/api/v1/endpoints', {
      app_id: app.id,
      url: 'http://localhost:3000/hook',
      description: 'local',
      event_types: ['invoice.paid'],
    });
    assert.equal(reply.status, 201);
    assert.match(reply.body.id, /^ep_/);
    assert.equal(reply.body.app_id, app.id);
    assert.equal(reply.body.url, 'http://localhost:3000/hook');
    assert.equal(reply.body.status, 'active');
    assert.deepEqual(reply.body.event_types, ['invoice.paid']);
    assert.equal(reply.body.description, 'local');
    assert.match(reply.body.signing_secret, /^whsec_[A-Za-z0-9+/=]{20,}$/);

    const listed = await api.get('/api/v1/endpoints');
    assert.equal(listed.status, 200);
    assert.equal(listed.body.object, 'list');
    const found = listed.body.data.find((e: any) => e.id === reply.body.id);
    assert.ok(found);
    assert.equal(found.signing_secret, undefined);
    assert.ok(!JSON.stringify(listed.body).includes(reply.body.signing_secret));
    const read = await api.get(`/api/v1/endpoints/${reply.body.id}`);
    assert.equal(read.status, 200);
    assert.equal(read.body.signing_secret, undefined);
    assert.equal(read.body.url, 'http://localhost:3000/hook');
  });

  test('event_types omitted or empty subscribes to every type', async () => {
    const app = await createApp(api);
    const omitted = await createEndpoint(api, app.id);
    assert.deepEqual(omitted.event_types, []);
    assert.equal(omitted.description, '');
    const empty = await createEndpoint(api, app.id, { event_types: [] });
    assert.deepEqual(empty.event_types, []);
    // A catalog entry added later is received too.
    await api.post('/api/v1/event-types', { name: 'order.shipped.later' });
    const message = await emit(api, app.id, 'order.shipped.later', {});
    assert.equal(message.delivery_ids.length, 2);
  });

  test('create errors: 404 unknown app, 400 missing app_id, invalid or non-http URL, unknown event types', async () => {
    const app = await createApp(api);
    const before = await idsOf(api, '/api/v1/endpoints');
    assertError(
      await api.post('/api/v1/endpoints', { app_id: 'app_doesnotexist', url: 'https://example.com' }),
      404,
      'not_found',
    );
    assertError(await api.post('/api/v1/endpoints', { url: 'https://example.com' }), 400, 'invalid_request', /app_id/);
    assertError(await api.post('/api/v1/endpoints', { app_id: app.id }), 400, 'invalid_request', /url/);
    assertError(
      await api.post('/api/v1/endpoints', { app_id: app.id, url: 'not a url' }),
      400,
      'invalid_request',
      /url/,
    );
    assertError(
      await api.post('/api/v1/endpoints', { app_id: app.id, url: '/relative' }),
      400,
      'invalid_request',
      /url/,
    );
    assertError(
      await api.post('/api/v1/endpoints', { app_id: app.id, url: 'ftp://example.com/x' }),
      400,
      'invalid_request',
      /http/,
    );
    assertError(
      await api.post('/api/v1/endpoints', { app_id: app.id, url: 'javascript:alert(1)' }),
      400,
      'invalid_request',
      /http/,
    );
    for (const url of [
      '  https://example.com/hook',
      'https://example.com/hook\t',
      'https://example.com/a b',
      'https://example.com/\u00a0x',
      'https://example.com/\nx',
    ]) {
      assertError(
        await api.post('/api/v1/endpoints', { app_id: app.id, url }),
        400,
        'invalid_request',
        /spaces or control characters/,
      );
    }
    assertError(
      await api.post('/api/v1/endpoints', { app_id: app.id, url: 'https://example.com', event_types: ['nope.nope'] }),
      400,
      'invalid_request',
      /nope\.nope/,
    );
    assertError(
      await api.post('/api/v1/endpoints', { app_id: app.id, url: 'https://example.com', event_types: 'invoice.paid' }),
      400,
      'invalid_request',
      /event_types/,
    );
    assert.deepEqual(await idsOf(api, '/api/v1/endpoints'), before);
  });

  test('Live endpoints need https to a public host; Test allows http and localhost', async () => {
    const liveApp = await createApp(live);
    const before = await idsOf(live, '/api/v1/endpoints');
    for (const url of [
      'http://example.com/hook',
      'https://127.0.0.1/hook',
      'https://10.0.0.1/hook',
      'https://localhost/hook',
      'https://[::1]/hook',
      'https://169.254.169.254/latest',
      'https://2130706433/',
      'https://192.168.1.1/',
    ]) {
      assertError(
        await live.post('/api/v1/endpoints', { app_id: liveApp.id, url }),
        400,
        'invalid_request',
        /https|localhost|private|reserved/,
      );
    }
    assert.deepEqual(await idsOf(live, '/api/v1/endpoints'), before);
    const ok = await live.post('/api/v1/endpoints', { app_id: liveApp.id, url: 'https://example.com/hook' });
    assert.equal(ok.status, 201);

    const testApp = await createApp(api);
    for (const url of ['http://localhost:8080/hook', 'http://127.0.0.1:9/hook', 'https://10.0.0.1/hook']) {
      assert.equal((await api.post('/api/v1/endpoints', { app_id: testApp.id, url })).status, 201, url);
    }
    // Updating a Live endpoint follows the same rules.
    assertError(
      await live.patch(`/api/v1/endpoints/${ok.body.id}`, { url: 'https://127.0.0.1/' }),
      400,
      'invalid_request',
    );
    assert.equal((await live.get(`/api/v1/endpoints/${ok.body.id}`)).body.url, 'https://example.com/hook');
  });

  test('rotate-secret: new whsec_ secret, previous_valid_until is now + HERALD_SECRET_GRACE', async () => {
    const app = await createApp(api);
    const endpoint = await createEndpoint(api, app.id);
    const before = Date.now();
    const reply = await api.post(`/api/v1/endpoints/${endpoint.id}/rotate-secret`);
    const after = Date.now();
    assert.equal(reply.status, 200);
    assert.equal(reply.body.id, endpoint.id);
    assert.match(reply.body.signing_secret, /^whsec_/);
    assert.notEqual(reply.body.signing_secret, endpoint.signing_secret);
    const until = Date.parse(reply.body.previous_valid_until);
    assert.ok(
      until >= before + GRACE_MS && until <= after + GRACE_MS,
      `previous_valid_until ${reply.body.previous_valid_until}`,
    );
    const again = await api.post(`/api/v1/endpoints/${endpoint.id}/rotate-secret`);
    assert.notEqual(again.body.signing_secret, reply.body.signing_secret);
    assertError(await api.post('/api/v1/endpoints/ep_doesnotexist/rotate-secret'), 404, 'not_found');
  });

  test('patch updates url, description, event_types and status; disabling makes new deliveries disabled', async () => {
    const app = await createApp(api);
    const endpoint = await createEndpoint(api, app.id);
    const pending = await emit(api, app.id);

    const updated = await api.patch(`/api/v1/endpoints/${endpoint.id}`, {
      url: 'https://example.org/new',
      description: 'changed',
      event_types: ['customer.created'],
    });
    assert.equal(updated.status, 200);
    assert.equal(updated.body.url, 'https://example.org/new');
    assert.equal(updated.body.description, 'changed');
    assert.deepEqual(updated.body.event_types, ['customer.created']);
    assert.equal(updated.body.status, 'active');
    assert.deepEqual((await emit(api, app.id, 'invoice.paid')).delivery_ids, []);

    const disabled = await api.patch(`/api/v1/endpoints/${endpoint.id}`, { status: 'disabled', event_types: [] });
    assert.equal(disabled.body.status, 'disabled');
    assert.equal((await api.get(`/api/v1/endpoints/${endpoint.id}`)).body.status, 'disabled');
    const whileDisabled = await emit(api, app.id);
    assert.equal(whileDisabled.delivery_ids.length, 1);
    const delivery = await api.get(`/api/v1/deliveries/${whileDisabled.delivery_ids[0]}`);
    assert.equal(delivery.body.status, 'disabled');
    assert.equal(delivery.body.next_attempt_at, null);
    // The delivery still pending when its endpoint was disabled is disabled too, not dropped.
    assert.equal((await api.get(`/api/v1/deliveries/${pending.delivery_ids[0]}`)).body.status, 'disabled');

    const enabled = await api.patch(`/api/v1/endpoints/${endpoint.id}`, { status: 'active' });
    assert.equal(enabled.body.status, 'active');
    const afterEnable = await emit(api, app.id);
    assert.equal((await api.get(`/api/v1/deliveries/${afterEnable.delivery_ids[0]}`)).body.status, 'pending');

    assertError(
      await api.patch(`/api/v1/endpoints/${endpoint.id}`, { status: 'failing' }),
      400,
      'invalid_request',
      /status/,
    );
    assertError(
      await api.patch(`/api/v1/endpoints/${endpoint.id}`, { event_types: ['nope.nope'] }),
      400,
      'invalid_request',
      /nope\.nope/,
    );
    assertError(await api.patch(`/api/v1/endpoints/${endpoint.id}`, { url: 'nope' }), 400, 'invalid_request', /url/);
    assertError(await api.patch('/api/v1/endpoints/ep_doesnotexist', { description: 'x' }), 404, 'not_found');
    assert.equal((await api.get(`/api/v1/endpoints/${endpoint.id}`)).body.url, 'https://example.org/new');
  });

  test('delete removes the endpoint: 204, then 404, and no more deliveries for it', async () => {
    const app = await createApp(api);
    const endpoint = await createEndpoint(api, app.id);
    const deleted = await api.delete(`/api/v1/endpoints/${endpoint.id}`);
    assert.equal(deleted.status, 204);
    assertError(await api.get(`/api/v1/endpoints/${endpoint.id}`), 404, 'not_found');
    assertError(await api.delete(`/api/v1/endpoints/${endpoint.id}`), 404, 'not_found');
    assertError(await api.post(`/api/v1/endpoints/${endpoint.id}/rotate-secret`), 404, 'not_found');
    assert.deepEqual((await emit(api, app.id)).delivery_ids, []);
  });

  test('list filters by app_id and pages without duplicates or gaps', async () => {
    const { test: fresh } = await bootstrap(service.url, 'Endpoint paging');
    const a = await createApp(fresh);
    const b = await createApp(fresh);
    const created: string[] = [];
    for (let i = 0; i < 9; i++) created.push((await createEndpoint(fresh, i % 3 === 0 ? b.id : a.id)).id);
    const all = await listAll(fresh, '/api/v1/endpoints', 2);
    assert.deepEqual(
      all.map((e) => e.id),
      [...created].reverse(),
    );
    const ofB = await listAll(fresh, `/api/v1/endpoints?app_id=${b.id}`, 2);
    assert.deepEqual(
      ofB.map((e) => e.id),
      created.filter((_, i) => i % 3 === 0).reverse(),
    );
  });
});

test('an application holds at most HERALD_MAX_ENDPOINTS_PER_APP endpoints: one more is 409 naming the limit, also when created at once', async (t) => {
  const service = await startTestService({ HERALD_ROLE: 'api', HERALD_MAX_ENDPOINTS_PER_APP: '3' });
  t.after(() => service.stop());
  const { test: api } = await bootstrap(service.url);
  const app = await createApp(api);
  // Five at once against a limit of three: exactly three pass.
  const replies = await Promise.all(
    Array.from({ length: 5 }, (_, i) =>
      api.post('/api/v1/endpoints', { app_id: app.id, url: `http://localhost:3000/h${i}` }),
    ),
  );
  assert.deepEqual(replies.map((r) => r.status).sort(), [201, 201, 201, 409, 409]);
  const refused = replies.find((r) => r.status === 409)!;
  assertError(refused, 409, 'conflict');
  assert.match(refused.body.error.message, /3 endpoints.*HERALD_MAX_ENDPOINTS_PER_APP/);
  const listed = await api.get(`/api/v1/endpoints?app_id=${app.id}`);
  assert.equal(listed.body.data.length, 3, 'nothing stored for the refused ones');

  // Another application has its own room, and deleting one makes room again.
  assert.equal((await createEndpoint(api, (await createApp(api)).id)).status, 'active');
  assert.equal((await api.delete(`/api/v1/endpoints/${listed.body.data[0].id}`)).status, 204);
  assert.equal(
    (await api.post('/api/v1/endpoints', { app_id: app.id, url: 'http://localhost:3000/again' })).status,
    201,
  );
});
