import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService } from '../../support/service.js';
import { bootstrap } from '../../support/client.js';
import { assertSvixError } from '../../support/api.js';

// Issue 42, finding 10: an eventId never looks like a message id (`{msg_id}` takes either), and the two
// surfaces keep their idempotency keys apart, so a key never answers with a message of an application
// its request did not name.

test('an eventId starting with evt_ is refused (422): {msg_id} reads one message only', async (t) => {
  const service = await startTestService();
  t.after(() => service.stop());
  const { test: api } = await bootstrap(service.url);
  const app = (await api.post('/api/v1/applications', { name: 'Events' })).body;
  const send = (eventId: string) =>
    api.post(`/api/v1/app/${app.id}/msg`, { eventType: 'invoice.paid', payload: { n: 1 }, eventId });

  const first = await send('order-1');
  assert.equal(first.status, 202, JSON.stringify(first.body));
  // An eventId that is another message's id, or any evt_ one, would make {msg_id} ambiguous.
  for (const eventId of [first.body.id, 'evt_01jd5x3k8m2n4p6q8r0s2t4v6w', 'evt_']) {
    const refused = await send(eventId);
    assertSvixError(refused, 422, 'validation');
    assert.match(refused.body.detail[0].msg, /eventId must not start with evt_/);
  }
  const read = await api.get(`/api/v1/app/${app.id}/msg/${first.body.id}`);
  assert.equal(read.status, 200);
  assert.equal(read.body.eventId, 'order-1');
  assert.equal((await api.get(`/api/v1/app/${app.id}/msg/order-1`)).body.id, first.body.id);
  const listed = (await api.get(`/api/v1/app/${app.id}/msg`)).body.data;
  assert.equal(listed.length, 1, 'nothing was stored for the refused ones');
  // Other prefixes and uppercase are not ids.
  assert.equal((await send('EVT_1')).status, 202);
  assert.equal((await send('evt-1')).status, 202);
});

test('one idempotency key on both surfaces makes two messages; none answers with another application', async (t) => {
  const service = await startTestService();
  t.after(() => service.stop());
  const { test: api } = await bootstrap(service.url);
  const appA = (await api.post('/api/v1/applications', { name: 'A', uid: 'shop-a' })).body;
  const appB = (await api.post('/api/v1/applications', { name: 'B', uid: 'shop-b' })).body;
  const svixEmit = (appId: string, key: string, n: number) =>
    api.post(`/api/v1/app/${appId}/msg`, { eventType: 'invoice.paid', payload: { n } }, { 'idempotency-key': key });
  const nativeEmit = (appId: string, key: string, n: number) =>
    api.post(
      '/api/v1/messages',
      { app_id: appId, event_type: 'invoice.paid', payload: { n } },
      { 'idempotency-key': key },
    );

  // A Svix emit's key, then a native emit to another application with it: a message of its own.
  const svixA = await svixEmit(appA.id, 'shared-1', 1);
  assert.equal(svixA.status, 202, JSON.stringify(svixA.body));
  const nativeB = await nativeEmit(appB.id, 'shared-1', 2);
  assert.equal(nativeB.status, 201, JSON.stringify(nativeB.body));
  assert.equal(nativeB.body.app_id, appB.id);
  assert.equal(nativeB.body.idempotent, false);
  assert.notEqual(nativeB.body.id, svixA.body.id);
  // To the same application too: the surfaces keep their keys apart.
  const nativeA = await nativeEmit('shop-a', 'shared-1', 3);
  assert.equal(nativeA.status, 200, 'the native key shared-1 is the one just used (native scope: environment)');
  assert.equal(nativeA.body.id, nativeB.body.id);

  // A native emit's key, then a Svix emit to another application with it: a message of its own.
  const nativeFirst = await nativeEmit(appA.id, 'shared-2', 4);
  assert.equal(nativeFirst.status, 201);
  const svixB = await svixEmit('shop-b', 'shared-2', 5);
  assert.equal(svixB.status, 202, JSON.stringify(svixB.body));
  assert.notEqual(svixB.body.id, nativeFirst.body.id);
  assert.deepEqual(svixB.body.payload, { n: 5 });
  const stored = await api.get(`/api/v1/messages/${svixB.body.id}`);
  assert.equal(stored.body.app_id, appB.id);

  // Each surface still repeats its own emits.
  const svixRepeat = await svixEmit(appA.id, 'shared-1', 9);
  assert.equal(svixRepeat.status, 202);
  assert.equal(svixRepeat.body.id, svixA.body.id);
  assert.deepEqual(svixRepeat.body.payload, { n: 1 });
  const nativeRepeat = await nativeEmit(appA.id, 'shared-2', 9);
  assert.equal(nativeRepeat.status, 200);
  assert.equal(nativeRepeat.body.id, nativeFirst.body.id);

  // Every message is where its emit named it.
  for (const [app, ids] of [
    [appA, [svixA.body.id, nativeFirst.body.id]],
    [appB, [nativeB.body.id, svixB.body.id]],
  ] as const) {
    const listed = (await api.get(`/api/v1/messages?app_id=${app.id}`)).body.data.map((m: { id: string }) => m.id);
    assert.deepEqual([...listed].sort(), [...ids].sort(), `messages of ${app.name}`);
  }
});
