import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, type Client } from '../../support/client.js';
import { eventually, Receiver } from '../../support/receiver.js';
import { assertError, createApp, createEndpoint, emit, listAll } from '../../support/api.js';

// Deliveries: get (with attempts) and retry (api-v1.md), list with filters (additive).
describe('deliveries', () => {
  let service: TestService;
  let receiver: Receiver;
  let api: Client;

  before(async () => {
    // One scheduled attempt only, so a failed delivery is final at once and retries are manual.
    service = await startTestService({ HERALD_RETRY_SCHEDULE: '0s' });
    receiver = await new Receiver().start();
    receiver.respond = (request) =>
      request.path.startsWith('/fail') ? { status: 500, body: 'nope' } : { status: 200, body: 'ok' };
    ({ test: api } = await bootstrap(service.url));
  });
  after(async () => {
    await service?.stop();
    await receiver?.stop();
  });

  const settled = (client: Client, id: string, status: string) =>
    eventually(
      async () => {
        const reply = await client.get(`/api/v1/deliveries/${id}`);
        return reply.body.status === status && reply.body.attempts.length > 0 ? reply.body : undefined;
      },
      20_000,
      `delivery ${id} to become ${status}`,
    );

  test('get: the delivery with its attempts, newest first', async () => {
    const app = await createApp(api);
    const endpoint = await createEndpoint(api, app.id, { url: `${receiver.url}/ok` });
    const message = await emit(api, app.id);
    const id = message.delivery_ids[0];
    const delivery = await settled(api, id, 'success');
    assert.equal(delivery.id, id);
    assert.match(delivery.id, /^dlv_/);
    assert.equal(delivery.object, 'delivery');
    assert.equal(delivery.message_id, message.id);
    assert.equal(delivery.endpoint_id, endpoint.id);
    assert.equal(delivery.attempt_count, 1);
    assert.equal(delivery.next_attempt_at, null);
    assert.equal(delivery.attempts.length, 1);
    const attempt = delivery.attempts[0];
    assert.equal(attempt.attempt_number, 1);
    assert.equal(attempt.trigger, 'scheduled');
    assert.equal(attempt.status, 'success');
    assert.equal(attempt.response_status, 200);
    assert.equal(attempt.error, null);
    assert.equal(typeof attempt.duration_ms, 'number');
    assert.ok(!Number.isNaN(Date.parse(attempt.created_at)));
    assertError(await api.get('/api/v1/deliveries/dlv_doesnotexist'), 404, 'not_found');
  });

  test('retry: 200 {delivery_id, status enqueued, attempt_number}; adds one attempt to the same delivery', async () => {
    const app = await createApp(api);
    await createEndpoint(api, app.id, { url: `${receiver.url}/fail` });
    const message = await emit(api, app.id);
    const id = message.delivery_ids[0];
    await settled(api, id, 'failed');

    const retry = await api.post(`/api/v1/deliveries/${id}/retry`);
    assert.equal(retry.status, 200);
    assert.deepEqual(retry.body, { delivery_id: id, status: 'enqueued', attempt_number: 2 });
    const after = await eventually(
      async () => {
        const reply = await api.get(`/api/v1/deliveries/${id}`);
        return reply.body.attempts.length >= 2 ? reply.body : undefined;
      },
      20_000,
      'the manual attempt',
    );
    assert.equal(after.attempts[0].attempt_number, 2);
    assert.equal(after.attempts[0].trigger, 'manual');
    assert.equal(after.attempts[0].status, 'failed');
    assert.equal(after.attempts[0].response_status, 500);
    assert.equal(after.attempts[1].attempt_number, 1);
    // Still one delivery for the message: retry never creates a new one.
    assert.equal((await listAll(api, `/api/v1/messages/${message.id}/deliveries`, 50)).length, 1);
    assertError(await api.post('/api/v1/deliveries/dlv_doesnotexist/retry'), 404, 'not_found');
  });

  test('list filters by endpoint_id, message_id and status, and pages through everything', async () => {
    const { test: fresh } = await bootstrap(service.url, 'Delivery list');
    const app = await createApp(fresh);
    const good = await createEndpoint(fresh, app.id, { url: `${receiver.url}/ok` });
    const bad = await createEndpoint(fresh, app.id, { url: `${receiver.url}/fail` });
    const messages = [];
    for (let i = 0; i < 4; i++) messages.push(await emit(fresh, app.id));
    const allIds = messages.flatMap((m) => m.delivery_ids);
    for (const id of allIds)
      await eventually(
        async () => ((await fresh.get(`/api/v1/deliveries/${id}`)).body.status !== 'pending' ? true : undefined),
        20_000,
        `delivery ${id} to settle`,
      );

    const all = await listAll(fresh, '/api/v1/deliveries', 3);
    assert.deepEqual(all.map((d) => d.id).sort(), [...allIds].sort());
    assert.equal(new Set(all.map((d) => d.id)).size, all.length);

    const ofGood = await listAll(fresh, `/api/v1/deliveries?endpoint_id=${good.id}`, 3);
    assert.equal(ofGood.length, 4);
    assert.ok(ofGood.every((d) => d.endpoint_id === good.id && d.status === 'success'));
    const failed = await listAll(fresh, '/api/v1/deliveries?status=failed', 3);
    assert.equal(failed.length, 4);
    assert.ok(failed.every((d) => d.endpoint_id === bad.id));
    const ofMessage = await listAll(fresh, `/api/v1/deliveries?message_id=${messages[0].id}`, 3);
    assert.deepEqual(ofMessage.map((d) => d.id).sort(), [...messages[0].delivery_ids].sort());
    const combined = await listAll(fresh, `/api/v1/deliveries?message_id=${messages[0].id}&status=success`, 3);
    assert.equal(combined.length, 1);
    assert.equal(combined[0].endpoint_id, good.id);

    assertError(await fresh.get('/api/v1/deliveries?status=bogus'), 400, 'invalid_request', /status/);
    assertError(await fresh.get('/api/v1/deliveries?limit=0'), 400, 'invalid_request', /limit/);
  });

  test('list filters by event_type and by creation time (since included, until excluded); each delivery names its event type', async () => {
    const { test: fresh } = await bootstrap(service.url, 'Delivery filters');
    const app = await createApp(fresh);
    await createEndpoint(fresh, app.id, { url: `${receiver.url}/ok` });
    const paid = await emit(fresh, app.id, 'invoice.paid');
    await new Promise((resolve) => setTimeout(resolve, 20));
    const boundary = (await fresh.get(`/api/v1/deliveries/${paid.delivery_ids[0]}`)).body.created_at as string;
    await new Promise((resolve) => setTimeout(resolve, 20));
    const customer = await emit(fresh, app.id, 'customer.created');
    const created = (await fresh.get(`/api/v1/deliveries/${customer.delivery_ids[0]}`)).body.created_at as string;

    const all = await listAll(fresh, '/api/v1/deliveries', 10);
    assert.deepEqual(
      all.map((d) => [d.id, d.event_type]),
      [
        [customer.delivery_ids[0], 'customer.created'],
        [paid.delivery_ids[0], 'invoice.paid'],
      ],
    );
    assert.equal((await fresh.get(`/api/v1/deliveries/${paid.delivery_ids[0]}`)).body.event_type, 'invoice.paid');

    const ofType = await listAll(fresh, '/api/v1/deliveries?event_type=customer.created', 10);
    assert.deepEqual(
      ofType.map((d) => d.id),
      customer.delivery_ids,
    );
    assert.equal((await listAll(fresh, '/api/v1/deliveries?event_type=nothing.here', 10)).length, 0);

    const since = await listAll(fresh, `/api/v1/deliveries?since=${encodeURIComponent(created)}`, 10);
    assert.deepEqual(
      since.map((d) => d.id),
      customer.delivery_ids,
      'since includes its own instant',
    );
    const until = await listAll(fresh, `/api/v1/deliveries?until=${encodeURIComponent(created)}`, 10);
    assert.deepEqual(
      until.map((d) => d.id),
      paid.delivery_ids,
      'until excludes its own instant',
    );
    const window = await listAll(
      fresh,
      `/api/v1/deliveries?since=${encodeURIComponent(boundary)}&until=${encodeURIComponent(created)}&event_type=invoice.paid`,
      10,
    );
    assert.deepEqual(
      window.map((d) => d.id),
      paid.delivery_ids,
    );

    assertError(await fresh.get('/api/v1/deliveries?since=yesterday'), 400, 'invalid_request', /since/);
    assertError(
      await fresh.get(`/api/v1/deliveries?since=${encodeURIComponent(created)}&until=${encodeURIComponent(boundary)}`),
      400,
      'invalid_request',
      /since must be before until/,
    );
  });
});
