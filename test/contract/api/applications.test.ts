import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, type Client } from '../../support/client.js';
import { assertError, createApp, createEndpoint, emit, idsOf, listAll } from '../../support/api.js';

// Applications: list and create (api-v1.md), get/update/delete by id or uid (additive).
describe('applications', () => {
  let service: TestService;
  let api: Client;

  before(async () => {
    // No delivery worker: these tests read API state only.
    service = await startTestService({ HERALD_ROLE: 'api' });
    ({ test: api } = await bootstrap(service.url));
  });
  after(async () => service?.stop());

  test('create returns 201 with id, name, uid and portal_path; list shows it with created_at and without portal_path', async () => {
    const reply = await api.post('/api/v1/applications', { name: 'Acme', uid: 'acme-1' });
    assert.equal(reply.status, 201);
    assert.match(reply.body.id, /^app_/);
    assert.equal(reply.body.name, 'Acme');
    assert.equal(reply.body.uid, 'acme-1');
    assert.match(reply.body.portal_path, /^\/portal\/[A-Za-z0-9]{32,}$/);

    const listed = await api.get('/api/v1/applications');
    assert.equal(listed.status, 200);
    assert.equal(listed.body.object, 'list');
    const found = listed.body.data.find((a: any) => a.id === reply.body.id);
    assert.ok(found, 'created application is listed');
    assert.equal(found.name, 'Acme');
    assert.equal(found.uid, 'acme-1');
    assert.ok(!Number.isNaN(Date.parse(found.created_at)));
    assert.equal(found.portal_path, undefined, 'shown by create only: only its hash is stored');

    const noUid = await createApp(api, { name: 'No uid' });
    assert.equal(noUid.uid, null);
    assert.notEqual(noUid.portal_path, reply.body.portal_path);
  });

  test('a duplicate uid is 409 conflict and creates nothing', async () => {
    await createApp(api, { name: 'First', uid: 'dup-uid' });
    const before = await idsOf(api, '/api/v1/applications');
    assertError(await api.post('/api/v1/applications', { name: 'Second', uid: 'dup-uid' }), 409, 'conflict', /dup-uid/);
    assert.deepEqual(await idsOf(api, '/api/v1/applications'), before);
  });

  test('missing or empty name is 400 invalid_request naming the field', async () => {
    const before = await idsOf(api, '/api/v1/applications');
    assertError(await api.post('/api/v1/applications', {}), 400, 'invalid_request', /name/);
    assertError(await api.post('/api/v1/applications', { name: '' }), 400, 'invalid_request', /name/);
    assertError(await api.post('/api/v1/applications', { name: 7 }), 400, 'invalid_request', /name/);
    assertError(
      await api.post('/api/v1/applications', { name: 'x', uid: 'app_looks_like_an_id' }),
      400,
      'invalid_request',
      /uid/,
    );
    assert.deepEqual(await idsOf(api, '/api/v1/applications'), before);
  });

  test('get by id and by uid; unknown is 404', async () => {
    const app = await createApp(api, { name: 'Gettable', uid: 'gettable' });
    const byId = await api.get(`/api/v1/applications/${app.id}`);
    assert.equal(byId.status, 200);
    assert.equal(byId.body.id, app.id);
    assert.equal(byId.body.portal_path, undefined, 'the portal path is not kept to be shown again');
    const byUid = await api.get('/api/v1/applications/gettable');
    assert.equal(byUid.status, 200);
    assert.equal(byUid.body.id, app.id);
    assertError(await api.get('/api/v1/applications/app_doesnotexist'), 404, 'not_found');
    assertError(await api.get('/api/v1/applications/no-such-uid'), 404, 'not_found');
  });

  test('patch changes name and uid; a taken uid is 409; unknown is 404', async () => {
    const app = await createApp(api, { name: 'Before', uid: 'patch-me' });
    await createApp(api, { name: 'Holder', uid: 'taken-uid' });
    const renamed = await api.patch(`/api/v1/applications/${app.id}`, { name: 'After' });
    assert.equal(renamed.status, 200);
    assert.equal(renamed.body.name, 'After');
    assert.equal(renamed.body.uid, 'patch-me');

    const byUid = await api.patch('/api/v1/applications/patch-me', { uid: 'patched' });
    assert.equal(byUid.status, 200);
    assert.equal(byUid.body.uid, 'patched');
    assert.equal((await api.get('/api/v1/applications/patched')).body.name, 'After');

    assertError(await api.patch(`/api/v1/applications/${app.id}`, { uid: 'taken-uid' }), 409, 'conflict');
    assert.equal((await api.get(`/api/v1/applications/${app.id}`)).body.uid, 'patched');
    assertError(await api.patch(`/api/v1/applications/${app.id}`, { name: '' }), 400, 'invalid_request', /name/);

    const cleared = await api.patch(`/api/v1/applications/${app.id}`, { uid: null });
    assert.equal(cleared.status, 200);
    assert.equal(cleared.body.uid, null);
    assertError(await api.patch('/api/v1/applications/app_doesnotexist', { name: 'x' }), 404, 'not_found');
  });

  test('delete removes the application and its endpoints; messages stay readable; emit is then 404', async () => {
    const app = await createApp(api, { name: 'Doomed', uid: 'doomed' });
    const endpoint = await createEndpoint(api, app.id);
    const message = await emit(api, app.id);
    const deleted = await api.delete('/api/v1/applications/doomed');
    assert.equal(deleted.status, 204);
    assertError(await api.get(`/api/v1/applications/${app.id}`), 404, 'not_found');
    assertError(await api.get(`/api/v1/endpoints/${endpoint.id}`), 404, 'not_found');
    assert.ok(!(await idsOf(api, '/api/v1/applications')).includes(app.id));
    assert.equal((await api.get(`/api/v1/messages/${message.id}`)).status, 200);
    assertError(
      await api.post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid', payload: {} }),
      404,
      'not_found',
    );
    assertError(await api.delete(`/api/v1/applications/${app.id}`), 404, 'not_found');
    // The uid is free again.
    await createApp(api, { name: 'Reborn', uid: 'doomed' });
  });

  test('list pagination walks every application once, newest first', async () => {
    const { test: fresh } = await bootstrap(service.url, 'Paging org');
    const created: string[] = [];
    for (let i = 0; i < 13; i++) created.push((await createApp(fresh, { name: `App ${i}` })).id);
    for (const limit of [1, 4, 13, 50]) {
      const all = await listAll(fresh, '/api/v1/applications', limit);
      assert.deepEqual(
        all.map((a) => a.id),
        [...created].reverse(),
        `limit=${limit}`,
      );
    }
    assertError(await fresh.get('/api/v1/applications?limit=0'), 400, 'invalid_request', /limit/);
    assertError(await fresh.get('/api/v1/applications?limit=abc'), 400, 'invalid_request', /limit/);
  });

  test('app_id filters on lists accept the uid as well as the id', async () => {
    const app = await createApp(api, { name: 'Filtered', uid: 'filter-by-uid' });
    const other = await createApp(api, { name: 'Other' });
    const endpoint = await createEndpoint(api, app.id);
    await createEndpoint(api, other.id);
    const message = await emit(api, app.id);
    await emit(api, other.id);

    for (const name of [app.id, 'filter-by-uid']) {
      assert.deepEqual(await idsOf(api, `/api/v1/endpoints?app_id=${name}`), [endpoint.id]);
      assert.deepEqual(await idsOf(api, `/api/v1/messages?app_id=${name}`), [message.id]);
      assert.deepEqual(await idsOf(api, `/api/v1/deliveries?app_id=${name}`), message.delivery_ids);
    }
    assert.deepEqual(await idsOf(api, '/api/v1/endpoints?app_id=no-such-app'), []);
  });
});
