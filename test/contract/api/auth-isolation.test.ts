import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, Client } from '../../support/client.js';
import {
  assertError,
  assertSvixError,
  AUTHENTICATED_ROUTES,
  concrete,
  createApp,
  createEndpoint,
  emit,
  idsOf,
  SVIX_ROUTES,
} from '../../support/api.js';

// Authentication on every route, and isolation between organizations and between Test and Live.
describe('authentication and isolation', () => {
  let service: TestService;
  let owner: Client; // organization A, Test
  let ownerLive: Client; // organization A, Live
  let stranger: Client; // organization B, Test
  let strangerLive: Client; // organization B, Live
  let revoked: Client;
  // Resources of organization A in Test.
  let app: any, endpoint: any, message: any, ownerKey: any;

  before(async () => {
    service = await startTestService({ HERALD_ROLE: 'api' });
    const a = await bootstrap(service.url, 'Org A');
    const b = await bootstrap(service.url, 'Org B');
    owner = a.test;
    ownerLive = a.live;
    stranger = b.test;
    strangerLive = b.live;
    const extra = await owner.post('/api/v1/api-keys', { name: 'to revoke' });
    revoked = owner.withKey(extra.body.key);
    assert.equal((await owner.delete(`/api/v1/api-keys/${extra.body.id}`)).status, 200);

    app = await createApp(owner, { name: 'A app', uid: 'shared-uid' });
    endpoint = await createEndpoint(owner, app.id);
    assert.equal((await owner.post('/api/v1/event-types', { name: 'a.private', example_json: { a: 1 } })).status, 201);
    message = await emit(owner, app.id, 'a.private', { a: 1 });
    ownerKey = (await owner.post('/api/v1/api-keys', { name: 'A second key' })).body;
  });
  after(async () => service?.stop());

  test('every route answers 401 to a missing, malformed, unknown or revoked key', async () => {
    const anonymous = new Client(service.url);
    const badKeys = [
      ['missing', anonymous, {}],
      ['malformed', anonymous, { authorization: 'Bearer' }],
      ['not bearer', anonymous, { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }],
      ['odd characters', anonymous, { authorization: 'Bearer sk_test_ÿ"\'<>' }],
      ['unknown', anonymous.withKey(`sk_test_${'A'.repeat(33)}`), {}],
      ['unknown live', anonymous.withKey(`sk_live_${'A'.repeat(33)}`), {}],
      ['no prefix', anonymous.withKey('A'.repeat(40)), {}],
      ['revoked', revoked, {}],
    ] as const;
    for (const [method, path] of AUTHENTICATED_ROUTES) {
      for (const [what, client, headers] of badKeys) {
        const body = method === 'GET' || method === 'DELETE' ? undefined : {};
        const reply = await client.request(method, concrete(path, method === 'GET' ? app.id : 'x_1'), body, headers);
        if (SVIX_ROUTES.some(([m, p]) => m === method && p === path)) {
          assertSvixError(reply, 401, 'authentication_failed');
          continue;
        }
        assertError(reply, 401, 'unauthorized');
        assert.ok(reply.body.error.message.length > 5, `${what} key on ${method} ${path}`);
      }
    }
  });

  test('the scheme of the Authorization header is case-insensitive; the key is not', async () => {
    const anonymous = new Client(service.url);
    for (const scheme of ['bearer', 'BEARER', 'Bearer ']) {
      assert.equal(
        (await anonymous.get('/api/v1/applications', { authorization: `${scheme} ${ownerKey.key}` })).status,
        200,
        scheme,
      );
    }
    assertError(
      await anonymous.get('/api/v1/applications', { authorization: `Bearer ${ownerKey.key.toUpperCase()}` }),
      401,
      'unauthorized',
    );
  });

  test('a Live key of organization A does not see its Test keys, and vice versa', async () => {
    const liveKeys = await idsOf(ownerLive, '/api/v1/api-keys');
    assert.ok(!liveKeys.includes(ownerKey.id));
    assertError(await ownerLive.delete(`/api/v1/api-keys/${ownerKey.id}`), 404, 'not_found');
    assert.equal((await owner.withKey(ownerKey.key).get('/api/v1/applications')).status, 200, 'the key still works');
  });

  for (const [who, client] of [
    ['another organization', () => stranger],
    ['the Live environment of the same organization', () => ownerLive],
    ['the Live environment of another organization', () => strangerLive],
  ] as const) {
    test(`resources are invisible to ${who}: 404 by id, absent from lists`, async () => {
      const other = client();
      // Reads by id.
      assertError(await other.get(`/api/v1/applications/${app.id}`), 404, 'not_found');
      assertError(await other.get('/api/v1/applications/shared-uid'), 404, 'not_found');
      assertError(await other.get(`/api/v1/endpoints/${endpoint.id}`), 404, 'not_found');
      assertError(await other.get(`/api/v1/messages/${message.id}`), 404, 'not_found');
      assertError(await other.get(`/api/v1/messages/${message.id}/deliveries`), 404, 'not_found');
      assertError(await other.get(`/api/v1/deliveries/${message.delivery_ids[0]}`), 404, 'not_found');
      assertError(await other.get('/api/v1/event-types/a.private'), 404, 'not_found');
      // Writes by id.
      assertError(await other.patch(`/api/v1/applications/${app.id}`, { name: 'stolen' }), 404, 'not_found');
      assertError(await other.delete(`/api/v1/applications/${app.id}`), 404, 'not_found');
      assertError(await other.patch(`/api/v1/endpoints/${endpoint.id}`, { status: 'disabled' }), 404, 'not_found');
      assertError(await other.post(`/api/v1/endpoints/${endpoint.id}/rotate-secret`), 404, 'not_found');
      assertError(await other.delete(`/api/v1/endpoints/${endpoint.id}`), 404, 'not_found');
      assertError(await other.post(`/api/v1/messages/${message.id}/replay`), 404, 'not_found');
      assertError(await other.post(`/api/v1/deliveries/${message.delivery_ids[0]}/retry`), 404, 'not_found');
      assertError(await other.patch('/api/v1/event-types/a.private', { description: 'stolen' }), 404, 'not_found');
      assertError(await other.delete(`/api/v1/api-keys/${ownerKey.id}`), 404, 'not_found');
      // Emitting or attaching to another scope's application.
      assertError(
        await other.post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid', payload: {} }),
        404,
        'not_found',
      );
      assertError(
        await other.post('/api/v1/messages', { app_id: 'shared-uid', event_type: 'invoice.paid', payload: {} }),
        404,
        'not_found',
      );
      assertError(
        await other.post('/api/v1/endpoints', { app_id: app.id, url: 'https://example.com/x' }),
        404,
        'not_found',
      );
      // Lists, including filtered by the other's ids.
      assert.ok(!(await idsOf(other, '/api/v1/applications')).includes(app.id));
      assert.ok(!(await idsOf(other, '/api/v1/endpoints')).includes(endpoint.id));
      assert.ok(!(await idsOf(other, '/api/v1/messages')).includes(message.id));
      assert.deepEqual(await idsOf(other, `/api/v1/messages?app_id=${app.id}`), []);
      assert.ok(!(await idsOf(other, '/api/v1/deliveries')).includes(message.delivery_ids[0]));
      assert.deepEqual(await idsOf(other, `/api/v1/deliveries?message_id=${message.id}`), []);
      assert.deepEqual(await idsOf(other, `/api/v1/endpoints?app_id=${app.id}`), []);
      assert.ok(!(await idsOf(other, '/api/v1/event-types', 'name')).includes('a.private'));
      assert.ok(!(await idsOf(other, '/api/v1/api-keys')).includes(ownerKey.id));
      // Nothing of A changed.
      assert.equal((await owner.get(`/api/v1/applications/${app.id}`)).body.name, 'A app');
      assert.equal((await owner.get(`/api/v1/endpoints/${endpoint.id}`)).body.status, 'active');
      assert.equal((await owner.get('/api/v1/event-types/a.private')).body.description, '');
    });
  }

  test('uids and event type names are per environment: the same uid is free elsewhere', async () => {
    const theirs = await createApp(stranger, { name: 'B app', uid: 'shared-uid' });
    assert.notEqual(theirs.id, app.id);
    const theirsLive = await createApp(ownerLive, { name: 'A live app', uid: 'shared-uid' });
    assert.notEqual(theirsLive.id, app.id);
    assert.equal((await stranger.post('/api/v1/event-types', { name: 'a.private' })).status, 201);
    // Emitting by uid reaches each scope's own application.
    const emitted = await emit(stranger, 'shared-uid');
    assert.equal(emitted.app_id, theirs.id);
    assert.equal((await owner.get(`/api/v1/applications/shared-uid`)).body.id, app.id);
  });
});
