import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, type Client } from '../../support/client.js';
import { Receiver } from '../../support/receiver.js';
import { assertError, createApp, createEndpoint, emit, listAll } from '../../support/api.js';

// Messages: list, emit, get, replay, send-test, and a message's deliveries, as api-v1.md writes them.
describe('messages', () => {
  let service: TestService;
  let receiver: Receiver;
  let api: Client;
  let live: Client;

  before(async () => {
    service = await startTestService();
    receiver = await new Receiver().start();
    ({ test: api, live } = await bootstrap(service.url));
  });
  after(async () => {
    await service?.stop();
    await receiver?.stop();
  });

  const hook = () => `${receiver.url}/hook`;

  test('emit returns 201 with one delivery per subscribed endpoint, event-type filter applied', async () => {
    const app = await createApp(api, { name: 'Fan-out' });
    const all = await createEndpoint(api, app.id, { url: hook() });
    const allEmpty = await createEndpoint(api, app.id, { url: hook(), event_types: [] });
    const invoices = await createEndpoint(api, app.id, { url: hook(), event_types: ['invoice.paid'] });
    const customers = await createEndpoint(api, app.id, { url: hook(), event_types: ['customer.created'] });

    const reply = await api.post('/api/v1/messages', {
      app_id: app.id,
      event_type: 'invoice.paid',
      payload: { amount: 1 },
    });
    assert.equal(reply.status, 201);
    assert.match(reply.body.id, /^evt_/);
    assert.equal(reply.body.event_type, 'invoice.paid');
    assert.equal(reply.body.app_id, app.id);
    assert.equal(reply.body.idempotent, false);
    assert.equal(reply.body.delivery_ids.length, 3);
    for (const id of reply.body.delivery_ids) assert.match(id, /^dlv_/);

    const deliveries = await api.get(`/api/v1/messages/${reply.body.id}/deliveries`);
    assert.equal(deliveries.status, 200);
    assert.deepEqual(deliveries.body.data.map((d: any) => d.id).sort(), [...reply.body.delivery_ids].sort());
    assert.deepEqual(
      deliveries.body.data.map((d: any) => d.endpoint_id).sort(),
      [all.id, allEmpty.id, invoices.id].sort(),
    );
    for (const d of deliveries.body.data) assert.equal(d.message_id, reply.body.id);

    const other = await emit(api, app.id, 'customer.created', {});
    const otherDeliveries = await api.get(`/api/v1/messages/${other.id}/deliveries`);
    assert.deepEqual(
      otherDeliveries.body.data.map((d: any) => d.endpoint_id).sort(),
      [all.id, allEmpty.id, customers.id].sort(),
    );
  });

  test('emit to an application without endpoints stores the message and returns delivery_ids []', async () => {
    const app = await createApp(api, { name: 'Quiet' });
    const emitted = await emit(api, app.id);
    assert.deepEqual(emitted.delivery_ids, []);
    const read = await api.get(`/api/v1/messages/${emitted.id}`);
    assert.equal(read.status, 200);
    assert.equal(read.body.id, emitted.id);
  });

  test('emit accepts the application uid in place of its id', async () => {
    const app = await createApp(api, { name: 'By uid', uid: 'tenant-by-uid' });
    const reply = await api.post('/api/v1/messages', {
      app_id: 'tenant-by-uid',
      event_type: 'invoice.paid',
      payload: {},
    });
    assert.equal(reply.status, 201);
    assert.equal(reply.body.app_id, app.id);
  });

  test('emit errors: 404 unknown application, 400 unknown event_type, payload must be an object', async () => {
    const app = await createApp(api, { name: 'Errors' });
    assertError(
      await api.post('/api/v1/messages', { app_id: 'app_doesnotexist', event_type: 'invoice.paid', payload: {} }),
      404,
      'not_found',
      /application/,
    );
    assertError(
      await api.post('/api/v1/messages', { app_id: app.id, event_type: 'no.such.type', payload: {} }),
      400,
      'invalid_request',
      /no\.such\.type/,
    );
    assertError(
      await api.post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid', payload: [1] }),
      400,
      'invalid_request',
      /payload/,
    );
    assertError(
      await api.post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid' }),
      400,
      'invalid_request',
      /payload/,
    );
  });

  test('get message returns metadata only, never the payload', async () => {
    const app = await createApp(api, { name: 'Metadata' });
    const emitted = await emit(api, app.id, 'invoice.paid', { secret_marker: 'do-not-return-me' });
    const read = await api.get(`/api/v1/messages/${emitted.id}`);
    assert.equal(read.status, 200);
    assert.deepEqual(Object.keys(read.body).sort(), [
      'app_id',
      'channels',
      'created_at',
      'deliver_at',
      'event_type',
      'id',
      'object',
      'tags',
      'trace_id',
    ]);
    assert.equal(read.body.event_type, 'invoice.paid');
    assert.equal(read.body.app_id, app.id);
    assert.ok(!Number.isNaN(Date.parse(read.body.created_at)));
    const listed = await api.get(`/api/v1/messages?app_id=${app.id}`);
    assert.ok(!JSON.stringify(listed.body).includes('do-not-return-me'));
    assertError(await api.get('/api/v1/messages/evt_doesnotexist'), 404, 'not_found');
  });

  test('payload on demand: the stored payload; 404 elsewhere; 410 payload_gone once expunged or expired', async () => {
    const app = await createApp(api, { name: 'Payload reads' });
    const payload = { invoice_id: 'inv_7', amount: 4200, lines: [{ sku: 'a', qty: 2 }], note: 'é ✓', none: null };
    const emitted = await emit(api, app.id, 'invoice.paid', payload);
    const read = await api.get(`/api/v1/messages/${emitted.id}/payload`);
    assert.equal(read.status, 200, JSON.stringify(read.body));
    assert.deepEqual(read.body, {
      id: emitted.id,
      object: 'message_payload',
      app_id: app.id,
      event_type: 'invoice.paid',
      payload,
      created_at: emitted.created_at,
    });

    // Another environment and another organization do not see it; an unknown id is 404 too.
    assertError(await live.get(`/api/v1/messages/${emitted.id}/payload`), 404, 'not_found');
    const { test: stranger } = await bootstrap(service.url, 'Stranger');
    assertError(await stranger.get(`/api/v1/messages/${emitted.id}/payload`), 404, 'not_found');
    assertError(await api.get('/api/v1/messages/evt_doesnotexist/payload'), 404, 'not_found');

    // Expunged (the Svix surface's DELETE …/content): the message stays, its payload is gone.
    const expunged = await emit(api, app.id, 'invoice.paid', { secret: 1 });
    const expunge = await api.delete(`/api/v1/app/${app.id}/msg/${expunged.id}/content`);
    assert.equal(expunge.status, 204, JSON.stringify(expunge.body));
    assert.equal((await api.get(`/api/v1/messages/${expunged.id}`)).status, 200);
    assertError(await api.get(`/api/v1/messages/${expunged.id}/payload`), 410, 'payload_gone', /no longer stored/);

    // Past its own expiry (a Svix emit's payloadRetentionHours), before the hourly purge removes it.
    const expiring = await emit(api, app.id, 'invoice.paid', { short: true });
    await service.store.ctx.db
      .updateTable('payloads')
      .set({ expires_at: Date.now() - 1000 })
      .where('message_id', '=', expiring.id)
      .execute();
    assertError(await api.get(`/api/v1/messages/${expiring.id}/payload`), 410, 'payload_gone');
    // The untouched one still reads.
    assert.equal((await api.get(`/api/v1/messages/${emitted.id}/payload`)).status, 200);
  });

  test('list: newest first, at most 50, limit and cursor walk every message once, filters', async () => {
    const app = await createApp(api, { name: 'Many' });
    const otherApp = await createApp(api, { name: 'Other' });
    const emitted: string[] = [];
    // Sequential, so the order of creation is known.
    for (let i = 0; i < 55; i++)
      emitted.push((await emit(api, app.id, i % 5 === 0 ? 'customer.created' : 'invoice.paid', { i })).id);
    await emit(api, otherApp.id);

    const first = await api.get('/api/v1/messages');
    assert.equal(first.status, 200);
    assert.equal(first.body.object, 'list');
    assert.equal(first.body.data.length, 50);
    assert.equal(first.body.has_more, true);
    const times = first.body.data.map((m: any) => Date.parse(m.created_at));
    for (let i = 1; i < times.length; i++) assert.ok(times[i - 1] >= times[i], 'list is not newest first');

    const ofApp = await listAll(api, `/api/v1/messages?app_id=${app.id}`, 7);
    assert.deepEqual(
      ofApp.map((m) => m.id),
      [...emitted].reverse(),
    );

    const customers = await listAll(api, `/api/v1/messages?app_id=${app.id}&event_type=customer.created`, 50);
    assert.equal(customers.length, 11);
    assert.ok(customers.every((m) => m.event_type === 'customer.created' && m.app_id === app.id));

    assert.equal((await api.get(`/api/v1/messages?app_id=${otherApp.id}`)).body.data.length, 1);
    assertError(await api.get('/api/v1/messages?limit=51'), 400, 'invalid_request', /limit/);
  });

  test('list by creation time: since includes its instant, until excludes it', async () => {
    const app = await createApp(api, { name: 'Timed' });
    const first = await emit(api, app.id);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const second = await emit(api, app.id);
    const at = (await api.get(`/api/v1/messages/${second.id}`)).body.created_at as string;
    const since = await listAll(api, `/api/v1/messages?app_id=${app.id}&since=${encodeURIComponent(at)}`, 10);
    assert.deepEqual(
      since.map((m) => m.id),
      [second.id],
    );
    const until = await listAll(api, `/api/v1/messages?app_id=${app.id}&until=${encodeURIComponent(at)}`, 10);
    assert.deepEqual(
      until.map((m) => m.id),
      [first.id],
    );
    assertError(await api.get('/api/v1/messages?until=soon'), 400, 'invalid_request', /until/);
  });

  test('replay creates new deliveries for the endpoints subscribed now', async () => {
    const app = await createApp(api, { name: 'Replay' });
    const first = await createEndpoint(api, app.id, { url: hook() });
    const emitted = await emit(api, app.id);
    assert.equal(emitted.delivery_ids.length, 1);
    const second = await createEndpoint(api, app.id, { url: hook() });
    await createEndpoint(api, app.id, { url: hook(), event_types: ['customer.created'] });

    const replay = await api.post(`/api/v1/messages/${emitted.id}/replay`);
    assert.equal(replay.status, 200);
    assert.equal(replay.body.message_id, emitted.id);
    assert.equal(replay.body.status, 'enqueued');
    assert.equal(replay.body.delivery_ids.length, 2);
    for (const id of replay.body.delivery_ids) assert.ok(!emitted.delivery_ids.includes(id));

    const deliveries = await listAll(api, `/api/v1/messages/${emitted.id}/deliveries`, 1);
    assert.equal(deliveries.length, 3);
    const replayed = deliveries
      .filter((d) => replay.body.delivery_ids.includes(d.id))
      .map((d) => d.endpoint_id)
      .sort();
    assert.deepEqual(replayed, [first.id, second.id].sort());
    assertError(await api.post('/api/v1/messages/evt_doesnotexist/replay'), 404, 'not_found');
  });

  test('message deliveries of an unknown message is 404', async () => {
    assertError(await api.get('/api/v1/messages/evt_doesnotexist/deliveries'), 404, 'not_found');
  });

  test('send-test: 202, default invoice.paid with the catalog example payload', async () => {
    const app = await createApp(api, { name: 'Sample' });
    await createEndpoint(api, app.id, { url: `${receiver.url}/send-test` });
    const catalog = await api.get('/api/v1/event-types/invoice.paid');
    const before = receiver.received.length;

    const reply = await api.post('/api/v1/messages/send-test', { app_id: app.id });
    assert.equal(reply.status, 202);
    assert.match(reply.body.id, /^evt_/);
    assert.equal(reply.body.object, 'message');
    assert.equal(reply.body.status, 'accepted');
    assert.equal(reply.body.event_type, 'invoice.paid');
    assert.equal(reply.body.app_id, app.id);
    assert.equal(reply.body.delivery_ids.length, 1);
    assert.equal(typeof reply.body.note, 'string');

    await receiver.waitFor(before + 1, 20_000);
    const sent = receiver.received.slice(before).find((r) => r.path === '/send-test')!;
    const body = JSON.parse(sent.body);
    assert.equal(body.type, 'invoice.paid');
    assert.deepEqual(body.data, catalog.body.example_json);
    assert.equal(sent.headers['webhook-id'], reply.body.id);
  });

  test('send-test with an explicit event type and payload; errors 400, 404, and 403 with a Live key', async () => {
    const app = await createApp(api, { name: 'Sample 2' });
    const reply = await api.post('/api/v1/messages/send-test', {
      app_id: app.id,
      event_type: 'customer.created',
      payload: { x: 1 },
    });
    assert.equal(reply.status, 202);
    assert.equal(reply.body.event_type, 'customer.created');
    assert.deepEqual(reply.body.delivery_ids, []);

    assertError(await api.post('/api/v1/messages/send-test', { app_id: 'app_doesnotexist' }), 404, 'not_found');
    assertError(
      await api.post('/api/v1/messages/send-test', { app_id: app.id, event_type: 'no.such.type' }),
      400,
      'invalid_request',
      /no\.such\.type/,
    );
    assertError(await api.post('/api/v1/messages/send-test', {}), 400, 'invalid_request', /app_id/);

    const liveApp = await createApp(live, { name: 'Live sample' });
    assertError(await live.post('/api/v1/messages/send-test', { app_id: liveApp.id }), 403, 'test_mode_only');
    assert.equal((await live.get('/api/v1/messages')).body.data.length, 0, 'a refused send-test must store nothing');
  });
});
