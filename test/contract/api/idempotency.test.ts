import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, type Client } from '../../support/client.js';
import { assertError, createApp, createEndpoint, idsOf } from '../../support/api.js';

// Idempotent emits (api-v1.md + decisions.md): header or body key, header wins, scope org + environment,
// window HERALD_IDEMPOTENCY_TTL, exactly one message under concurrency.
describe('idempotency', () => {
  let service: TestService;
  let api: Client;
  let live: Client;
  let stranger: Client;
  let app: any;
  let otherApp: any;

  before(async () => {
    service = await startTestService({ HERALD_ROLE: 'api' });
    ({ test: api, live } = await bootstrap(service.url));
    ({ test: stranger } = await bootstrap(service.url, 'Stranger'));
    app = await createApp(api, { name: 'Idempotent' });
    await createEndpoint(api, app.id);
    await createEndpoint(api, app.id, { event_types: ['invoice.paid'] });
    otherApp = await createApp(api, { name: 'Other' });
  });
  after(async () => service?.stop());

  const body = (extra: Record<string, unknown> = {}) => ({
    app_id: app.id,
    event_type: 'invoice.paid',
    payload: { n: 1 },
    ...extra,
  });

  test('header key: 201 then 200 with the same ids and idempotent:true, whatever the new body says', async () => {
    const first = await api.post('/api/v1/messages', body(), { 'Idempotency-Key': 'header-1' });
    assert.equal(first.status, 201);
    assert.equal(first.body.idempotent, false);
    assert.equal(first.body.delivery_ids.length, 2);
    const before = await idsOf(api, '/api/v1/messages');

    for (const changed of [
      body(),
      body({ payload: { n: 2 } }),
      { app_id: otherApp.id, event_type: 'customer.created', payload: {} },
      { app_id: 'app_doesnotexist', event_type: 'no.such', payload: {} },
    ]) {
      const repeat = await api.post('/api/v1/messages', changed, { 'Idempotency-Key': 'header-1' });
      assert.equal(repeat.status, 200, JSON.stringify(repeat.body));
      assert.equal(repeat.body.idempotent, true);
      assert.equal(repeat.body.id, first.body.id);
      assert.equal(repeat.body.app_id, app.id);
      assert.equal(repeat.body.event_type, 'invoice.paid');
      assert.deepEqual(repeat.body.delivery_ids, first.body.delivery_ids);
    }
    assert.deepEqual(await idsOf(api, '/api/v1/messages'), before, 'repeats create nothing');
    assert.equal((await api.get(`/api/v1/messages/${first.body.id}/deliveries`)).body.data.length, 2);
  });

  test('body key works the same way', async () => {
    const first = await api.post('/api/v1/messages', body({ idempotency_key: 'body-1' }));
    assert.equal(first.status, 201);
    const repeat = await api.post('/api/v1/messages', body({ idempotency_key: 'body-1', payload: { other: true } }));
    assert.equal(repeat.status, 200);
    assert.equal(repeat.body.idempotent, true);
    assert.equal(repeat.body.id, first.body.id);
    assert.deepEqual(repeat.body.delivery_ids, first.body.delivery_ids);
    // The header and the body key share one namespace.
    const viaHeader = await api.post('/api/v1/messages', body(), { 'Idempotency-Key': 'body-1' });
    assert.equal(viaHeader.status, 200);
    assert.equal(viaHeader.body.id, first.body.id);
  });

  test('when both are sent the header wins', async () => {
    const both = await api.post('/api/v1/messages', body({ idempotency_key: 'loser-body' }), {
      'Idempotency-Key': 'winner-header',
    });
    assert.equal(both.status, 201);
    const byHeader = await api.post('/api/v1/messages', body(), { 'Idempotency-Key': 'winner-header' });
    assert.equal(byHeader.status, 200);
    assert.equal(byHeader.body.id, both.body.id);
    // The body key was ignored, so it is still unused.
    const byBody = await api.post('/api/v1/messages', body({ idempotency_key: 'loser-body' }));
    assert.equal(byBody.status, 201);
    assert.notEqual(byBody.body.id, both.body.id);
  });

  test('scope is organization + environment: the same key elsewhere is a new message', async () => {
    const inTest = await api.post('/api/v1/messages', body(), { 'Idempotency-Key': 'scoped' });
    assert.equal(inTest.status, 201);
    const liveApp = await createApp(live, { name: 'Live' });
    const inLive = await live.post(
      '/api/v1/messages',
      { app_id: liveApp.id, event_type: 'invoice.paid', payload: {} },
      { 'Idempotency-Key': 'scoped' },
    );
    assert.equal(inLive.status, 201);
    assert.notEqual(inLive.body.id, inTest.body.id);
    assert.ok((await idsOf(live, '/api/v1/messages')).includes(inLive.body.id));
    const strangerApp = await createApp(stranger, { name: 'Stranger app' });
    const inOtherOrg = await stranger.post(
      '/api/v1/messages',
      { app_id: strangerApp.id, event_type: 'invoice.paid', payload: {} },
      { 'Idempotency-Key': 'scoped' },
    );
    assert.equal(inOtherOrg.status, 201);
    assert.notEqual(inOtherOrg.body.id, inTest.body.id);
    // Each repeats within its own scope.
    assert.equal(
      (
        await live.post(
          '/api/v1/messages',
          { app_id: liveApp.id, event_type: 'invoice.paid', payload: {} },
          { 'Idempotency-Key': 'scoped' },
        )
      ).body.id,
      inLive.body.id,
    );
  });

  test('a refused emit does not use up its key', async () => {
    assertError(
      await api.post('/api/v1/messages', body({ app_id: 'app_doesnotexist' }), { 'Idempotency-Key': 'after-404' }),
      404,
      'not_found',
    );
    assertError(
      await api.post('/api/v1/messages', body({ event_type: 'no.such' }), { 'Idempotency-Key': 'after-404' }),
      400,
      'invalid_request',
    );
    const ok = await api.post('/api/v1/messages', body(), { 'Idempotency-Key': 'after-404' });
    assert.equal(ok.status, 201);
  });

  test('bad keys are 400: empty or longer than 255 characters', async () => {
    assertError(
      await api.post('/api/v1/messages', body({ idempotency_key: '' })),
      400,
      'invalid_request',
      /idempotency_key/,
    );
    assertError(
      await api.post('/api/v1/messages', body({ idempotency_key: 'k'.repeat(256) })),
      400,
      'invalid_request',
      /idempotency_key/,
    );
    assertError(
      await api.post('/api/v1/messages', body(), { 'Idempotency-Key': 'k'.repeat(256) }),
      400,
      'invalid_request',
      /idempotency-key/i,
    );
    assertError(
      await api.post('/api/v1/messages', body({ idempotency_key: 7 })),
      400,
      'invalid_request',
      /idempotency_key/,
    );
  });

  test('20 concurrent emits with one key create exactly one message and all answer with its id', async () => {
    const target = await createApp(api, { name: 'Concurrent' });
    await createEndpoint(api, target.id);
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        api.post(
          '/api/v1/messages',
          { app_id: target.id, event_type: 'invoice.paid', payload: { i } },
          { 'Idempotency-Key': 'concurrent-key' },
        ),
      ),
    );
    for (const reply of replies) assert.ok(reply.status === 200 || reply.status === 201, JSON.stringify(reply.body));
    assert.equal(replies.filter((r) => r.status === 201).length, 1);
    const ids = new Set(replies.map((r) => r.body.id));
    assert.equal(ids.size, 1);
    const deliveryIds = new Set(replies.map((r) => JSON.stringify(r.body.delivery_ids)));
    assert.equal(deliveryIds.size, 1, 'every answer carries the same delivery ids');
    assert.deepEqual(await idsOf(api, `/api/v1/messages?app_id=${target.id}`), [...ids]);
    assert.equal((await idsOf(api, `/api/v1/deliveries?app_id=${target.id}`)).length, 1);
  });

  test('a key expires after HERALD_IDEMPOTENCY_TTL', async () => {
    const short = await startTestService({ HERALD_ROLE: 'api', HERALD_IDEMPOTENCY_TTL: '1s' });
    try {
      const { test: client } = await bootstrap(short.url);
      const target = await createApp(client);
      const send = () =>
        client.post(
          '/api/v1/messages',
          { app_id: target.id, event_type: 'invoice.paid', payload: {} },
          { 'Idempotency-Key': 'short-lived' },
        );
      const first = await send();
      assert.equal(first.status, 201);
      await new Promise((resolve) => setTimeout(resolve, 1_300));
      const later = await send();
      assert.equal(later.status, 201, 'the expired key creates a new message');
      assert.notEqual(later.body.id, first.body.id);
      assert.equal(later.body.idempotent, false);
      const repeat = await send();
      // The new emit took the key over; repeating right away (well within 1 s on any machine) dedupes again.
      if (Date.now() - Date.parse(later.body.created_at) < 900) {
        assert.equal(repeat.status, 200);
        assert.equal(repeat.body.id, later.body.id);
      }
      assert.ok((await idsOf(client, '/api/v1/messages')).length >= 2);
    } finally {
      await short.stop();
    }
  });
});
