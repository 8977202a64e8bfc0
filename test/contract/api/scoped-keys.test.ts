import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, type Client } from '../../support/client.js';
import { assertError, createApp, listAll } from '../../support/api.js';

// Scoped keys (decisions.md, Fourth wave, Access): the fields a key is made with and read back, what a
// create refuses, expiry, and that no key makes or revokes a key with more power than its own. What each
// role may call is walked over every route in access-walk.test.ts.
describe('scoped keys', () => {
  let service: TestService;
  let admin: Client;
  let live: Client;
  let appA: { id: string };
  let appB: { id: string };

  before(async () => {
    service = await startTestService({ HERALD_ROLE: 'api' });
    const org = await bootstrap(service.url);
    admin = org.test;
    live = org.live;
    appA = await createApp(admin, { name: 'A', uid: 'a' });
    appB = await createApp(admin, { name: 'B', uid: 'b' });
  });
  after(async () => service?.stop());

  const keyCount = async () => (await listAll(admin, '/api/v1/api-keys', 50)).length;

  test("a key made without the new fields is today's key: admin, every application, no expiry", async () => {
    const made = await admin.post('/api/v1/api-keys', { name: 'plain' });
    assert.equal(made.status, 201);
    assert.equal(made.body.role, 'admin');
    assert.equal(made.body.app_ids, null);
    assert.equal(made.body.expires_at, null);
    const listed = (await listAll(admin, '/api/v1/api-keys', 50)).find(
      (key: { id: string }) => key.id === made.body.id,
    );
    assert.deepEqual({ ...listed, key: made.body.key }, made.body, 'the list shows the same fields, never the key');
    assert.equal(listed.key, undefined);
  });

  test('role, applications (by id or uid) and expiry are kept and read back', async () => {
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const made = await admin.post('/api/v1/api-keys', {
      name: 'scoped',
      role: 'reader',
      app_ids: ['a', appB.id, 'a'],
      expires_at: expiresAt,
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.equal(made.body.role, 'reader');
    assert.deepEqual(made.body.app_ids, [appA.id, appB.id], 'uids become ids, once each');
    assert.equal(made.body.expires_at, expiresAt);
    const listed = (await listAll(admin, '/api/v1/api-keys', 50)).find(
      (key: { id: string }) => key.id === made.body.id,
    );
    assert.equal(listed.role, 'reader');
    assert.deepEqual(listed.app_ids, [appA.id, appB.id]);
    assert.equal(listed.expires_at, expiresAt);
  });

  test('bad input is 400 naming the field, and no key is stored', async () => {
    const otherOrg = await bootstrap(service.url, 'Other');
    const foreign = await createApp(otherOrg.test, { name: 'Foreign' });
    const liveApp = await createApp(live, { name: 'Live only' });
    const before = await keyCount();
    for (const [body, field] of [
      [{ role: 'owner' }, /role/],
      [{ role: 5 }, /role/],
      [{ app_ids: [foreign.id] }, /app_ids: application .* is not in this environment/],
      [{ app_ids: [liveApp.id] }, /app_ids: application .* is not in this environment/],
      [{ app_ids: [] }, /app_ids must name at least one/],
      [{ app_ids: 'a' }, /app_ids/],
      [{ expires_at: new Date(Date.now() - 1000).toISOString() }, /expires_at must be in the future/],
      [{ expires_at: 'tomorrow' }, /expires_at/],
    ] as const) {
      assertError(await admin.post('/api/v1/api-keys', body), 400, 'invalid_request', field);
    }
    assert.equal(await keyCount(), before, 'nothing stored');
  });

  test('an expired key is 401 saying it expired; until then it works', async () => {
    const expiresAt = Date.now() + 1_500;
    const made = await admin.post('/api/v1/api-keys', { expires_at: new Date(expiresAt).toISOString() });
    assert.equal(made.status, 201);
    const soon = admin.withKey(made.body.key);
    assert.equal((await soon.get('/api/v1/applications')).status, 200);
    await sleep(Math.max(0, expiresAt - Date.now()) + 100);
    assertError(await soon.get('/api/v1/applications'), 401, 'unauthorized', /expired at/);
  });

  test('no key makes or revokes a key with more power than its own', async () => {
    const limited = admin.withKey((await admin.post('/api/v1/api-keys', { app_ids: ['a'] })).body.key);
    const before = await keyCount();
    assertError(await limited.post('/api/v1/api-keys', {}), 403, 'forbidden', /must name app_ids among them/);
    assertError(
      await limited.post('/api/v1/api-keys', { app_ids: ['a', 'b'] }),
      403,
      'forbidden',
      new RegExp(`cannot make a key for application ${appB.id}`),
    );
    assert.equal(await keyCount(), before, 'nothing stored');
    const narrower = await limited.post('/api/v1/api-keys', { role: 'emitter', app_ids: ['a'] });
    assert.equal(narrower.status, 201, JSON.stringify(narrower.body));
    // It revokes what it could have made, not a key for every application.
    const everyApp = (await admin.post('/api/v1/api-keys', { name: 'every app' })).body;
    assertError(await limited.delete(`/api/v1/api-keys/${everyApp.id}`), 403, 'forbidden');
    assert.equal((await admin.withKey(everyApp.key).get('/api/v1/applications')).status, 200, 'still works');
    assert.equal((await limited.delete(`/api/v1/api-keys/${narrower.body.id}`)).status, 200);

    const expiring = admin.withKey(
      (await admin.post('/api/v1/api-keys', { expires_at: new Date(Date.now() + 60_000).toISOString() })).body.key,
    );
    assertError(await expiring.post('/api/v1/api-keys', {}), 403, 'forbidden', /must expire by then/);
    assertError(
      await expiring.post('/api/v1/api-keys', { expires_at: new Date(Date.now() + 120_000).toISOString() }),
      403,
      'forbidden',
      /must expire by then/,
    );
    const sooner = await expiring.post('/api/v1/api-keys', {
      expires_at: new Date(Date.now() + 30_000).toISOString(),
    });
    assert.equal(sooner.status, 201, JSON.stringify(sooner.body));
  });

  test('a key limited to applications cannot make another, through any route that would', async () => {
    const limited = admin.withKey((await admin.post('/api/v1/api-keys', { app_ids: ['a'] })).body.key);
    const upsert = await limited.request('PUT', '/api/v1/app/brand-new', { name: 'Brand new' });
    assert.equal(upsert.status, 403, JSON.stringify(upsert.body));
    const portal = await limited.post('/api/v1/auth/app-portal-access/brand-new', {
      application: { name: 'Brand new' },
    });
    assert.equal(portal.status, 403, JSON.stringify(portal.body));
    const emit = await limited.post('/api/v1/app/brand-new/msg', {
      eventType: 'invoice.paid',
      payload: {},
      application: { name: 'Brand new', uid: 'brand-new' },
    });
    assert.equal(emit.status, 403, JSON.stringify(emit.body));
    assert.equal((await admin.get('/api/v1/applications/brand-new')).status, 404, 'nothing was made');
    // Its own application, named by uid, still works.
    assert.equal((await limited.get('/api/v1/app/a')).status, 200);
  });

  test('an emitter emits and reads its message back, and nothing else', async () => {
    const emitter = admin.withKey((await admin.post('/api/v1/api-keys', { role: 'emitter' })).body.key);
    const emitted = await emitter.post('/api/v1/messages', {
      app_id: 'a',
      event_type: 'invoice.paid',
      payload: { n: 1 },
    });
    assert.equal(emitted.status, 201, JSON.stringify(emitted.body));
    assert.equal((await emitter.get(`/api/v1/messages/${emitted.body.id}`)).body.id, emitted.body.id);
    assertError(await emitter.get(`/api/v1/messages/${emitted.body.id}/payload`), 403, 'forbidden', /role emitter/);
    assertError(await emitter.get('/api/v1/endpoints'), 403, 'forbidden', /role emitter/);
    const viaSvix = await emitter.post('/api/v1/app/a/msg', { eventType: 'invoice.paid', payload: { n: 2 } });
    assert.equal(viaSvix.status, 202, JSON.stringify(viaSvix.body));
    assert.equal((await emitter.get(`/api/v1/app/a/msg/${viaSvix.body.id}`)).status, 200);
  });

  test('a reader reads payloads and changes nothing', async () => {
    const reader = admin.withKey((await admin.post('/api/v1/api-keys', { role: 'reader' })).body.key);
    const emitted = await admin.post('/api/v1/messages', {
      app_id: 'a',
      event_type: 'invoice.paid',
      payload: { n: 3 },
    });
    const payload = await reader.get(`/api/v1/messages/${emitted.body.id}/payload`);
    assert.equal(payload.status, 200);
    assertError(
      await reader.patch(`/api/v1/applications/${appA.id}`, { name: 'renamed' }),
      403,
      'forbidden',
      /may only read/,
    );
    assert.equal((await admin.get(`/api/v1/applications/${appA.id}`)).body.name, 'A');
  });
});
