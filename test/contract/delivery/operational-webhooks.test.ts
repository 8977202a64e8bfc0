import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { setup, startReceiver, webhookHeaders, type Setup } from '../../support/delivery.js';
import { eventually, type Received } from '../../support/receiver.js';
import { MAX_OPERATIONAL_ENDPOINTS } from '../../../src/domain/operational.js';

// Operational webhooks end to end, on the store the run selects: an operational endpoint on a real
// receiver gets every event type, each once per occurrence, signed with its own secret (checked with the
// standardwebhooks package), and each is an ordinary delivery readable through the API.

interface OpEvent {
  type: string;
  timestamp: string;
  data: {
    app_id: string;
    app_uid: string | null;
    endpoint_id: string;
    message_id?: string;
    delivery_id?: string;
    trigger?: string;
    last_attempt?: { attempt_number: number; response_status: number | null; error: string | null; created_at: string };
  };
}

/** An application of its own (so its messages go to one endpoint) and an endpoint on `path` of `url`. */
async function appWithEndpoint(s: Setup, uid: string, url: string) {
  const app = await s.api.post('/api/v1/applications', { name: uid, uid });
  assert.equal(app.status, 201);
  const endpoint = await s.api.post('/api/v1/endpoints', { app_id: app.body.id, url });
  assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
  const emit = async () => {
    const reply = await s.api.post('/api/v1/messages', { app_id: uid, event_type: 'invoice.paid', payload: { uid } });
    assert.equal(reply.status, 201);
    return { messageId: reply.body.id as string, deliveryId: reply.body.delivery_ids[0] as string };
  };
  return { appId: app.body.id as string, endpointId: endpoint.body.id as string, emit };
}

test('every operational event type reaches an operational endpoint once per occurrence, signed with its secret', {
  timeout: 120_000,
}, async (t) => {
  // Four scheduled attempts 100 ms apart (on PostgreSQL a retry can wait up to the 500 ms general claim);
  // an endpoint failing for 4 s with an exhausted delivery is disabled at its next failure.
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s,100ms,100ms,100ms', HERALD_DISABLE_AFTER: '4s' });
  const ops = await startReceiver(t);
  // Each customer endpoint answers by its path: a list of statuses, the last one repeated.
  const answers = new Map<string, number[]>();
  const customers = await startReceiver(t, (r) => {
    const list = answers.get(r.path) ?? [200];
    return { status: list.length > 1 ? list.shift()! : list[0]! };
  });

  const created = await s.api.post('/api/v1/operational-endpoints', { url: `${ops.url}/ops`, description: 'Pager' });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.match(created.body.id, /^ep_/);
  assert.match(created.body.signing_secret, /^whsec_/);
  const op = { id: created.body.id as string, secret: created.body.signing_secret as string };

  // The operational endpoint and its application are hidden from the endpoint and application routes.
  assert.deepEqual(
    (await s.api.get('/api/v1/operational-endpoints')).body.data.map((e: { id: string }) => e.id),
    [op.id],
  );
  assert.equal((await s.api.get('/api/v1/endpoints')).body.data.length, 0);
  assert.equal((await s.api.get(`/api/v1/endpoints/${op.id}`)).status, 404);
  assert.equal((await s.api.patch(`/api/v1/endpoints/${op.id}`, { description: 'x' })).status, 404);
  assert.equal((await s.api.delete(`/api/v1/endpoints/${op.id}`)).status, 404);
  assert.equal((await s.api.get(`/api/v1/applications/${created.body.app_id}`)).status, 404);
  const apps = (await s.api.get('/api/v1/applications')).body.data.map((a: { id: string }) => a.id);
  assert.ok(!apps.includes(created.body.app_id), 'the hidden application is not listed');
  const emitHidden = await s.api.post('/api/v1/messages', {
    app_id: created.body.app_id,
    event_type: 'invoice.paid',
    payload: {},
  });
  assert.equal(emitHidden.status, 404, 'nobody emits to the hidden application');

  // a: failing at its third failed attempt, exhausted at its fourth, recovered by a manual retry; then deleted.
  answers.set('/a', [500]);
  const a = await appWithEndpoint(s, 'acme-a', `${customers.url}/a`);
  assert.equal((await s.api.patch(`/api/v1/endpoints/${a.endpointId}`, { description: 'renamed' })).status, 200);
  const a1 = await a.emit();
  await s.until(a1.deliveryId, (d) => d.status === 'failed', 'a1 exhausted');
  answers.set('/a', [200]);
  assert.equal((await s.api.post(`/api/v1/deliveries/${a1.deliveryId}/retry`)).status, 200);
  await s.until(a1.deliveryId, (d) => d.status === 'success', 'a1 recovered');

  // b: a 410 disables it (gone).
  answers.set('/b', [410]);
  const b = await appWithEndpoint(s, 'acme-b', `${customers.url}/b`);
  await s.until((await b.emit()).deliveryId, (d) => d.status === 'disabled', 'b1 disabled by 410');

  // c: disabled by an update (manual).
  const c = await appWithEndpoint(s, 'acme-c', `${customers.url}/c`);
  assert.equal((await s.api.patch(`/api/v1/endpoints/${c.endpointId}`, { status: 'disabled' })).status, 200);

  // d: exhausted, then failing past HERALD_DISABLE_AFTER: its next failure disables it (failures).
  answers.set('/d', [500]);
  const d = await appWithEndpoint(s, 'acme-d', `${customers.url}/d`);
  const dStarted = Date.now();
  const d1 = await d.emit();
  await s.until(d1.deliveryId, (x) => x.status === 'failed', 'd1 exhausted');
  await sleep(Math.max(0, dStarted + 4_200 - Date.now()));
  const d2 = await d.emit();
  await s.until(d2.deliveryId, (x) => x.status === 'disabled', 'd2 stopped by the disable');

  // e: one failure, then a success: nothing was announced, so nothing recovers.
  answers.set('/e', [500, 200]);
  const e = await appWithEndpoint(s, 'acme-e', `${customers.url}/e`);
  const e1 = await e.emit();
  await s.until(e1.deliveryId, (x) => x.status === 'success', 'e1 delivered at its second attempt');

  // f: three failures (failing), then its fourth, scheduled, attempt succeeds (recovered).
  answers.set('/f', [500, 500, 500, 200]);
  const f = await appWithEndpoint(s, 'acme-f', `${customers.url}/f`);
  const f1 = await f.emit();
  await s.until(f1.deliveryId, (x) => x.status === 'success', 'f1 delivered at its fourth attempt');

  assert.equal((await s.api.delete(`/api/v1/endpoints/${a.endpointId}`)).status, 204);

  const expected: [string, string, string?][] = [
    ['endpoint.created', a.endpointId],
    ['endpoint.updated', a.endpointId],
    ['message.attempt.failing', a.endpointId],
    ['message.attempt.exhausted', a.endpointId],
    ['message.attempt.recovered', a.endpointId],
    ['endpoint.deleted', a.endpointId],
    ['endpoint.created', b.endpointId],
    ['endpoint.disabled', b.endpointId, 'gone'],
    ['endpoint.created', c.endpointId],
    ['endpoint.updated', c.endpointId],
    ['endpoint.disabled', c.endpointId, 'manual'],
    ['endpoint.created', d.endpointId],
    ['message.attempt.failing', d.endpointId],
    ['message.attempt.exhausted', d.endpointId],
    ['endpoint.disabled', d.endpointId, 'failures'],
    ['endpoint.created', e.endpointId],
    ['endpoint.created', f.endpointId],
    ['message.attempt.failing', f.endpointId],
    ['message.attempt.recovered', f.endpointId],
  ];
  await ops.waitFor(expected.length, 20_000).catch((error: Error) => {
    const got = ops.received.map((r) => {
      const { type, data } = JSON.parse(r.body) as OpEvent;
      return `${type} ${data.endpoint_id} ${data.trigger ?? ''}`;
    });
    throw new Error(`${error.message}: ${JSON.stringify(got)}; expected ${JSON.stringify(expected)}`);
  });
  // Anything raised twice or unexpected would arrive by now.
  await sleep(1_000);
  const events = ops.received.map((r) => ({
    r,
    event: new Webhook(op.secret).verify(r.body, webhookHeaders(r)) as OpEvent,
  }));
  const key = ([type, endpointId, trigger]: [string, string, string?]) => `${type} ${endpointId} ${trigger ?? ''}`;
  assert.deepEqual(
    events.map(({ event }) => key([event.type, event.data.endpoint_id, event.data.trigger])).sort(),
    expected.map(key).sort(),
    'each occurrence once, nothing else (no recovery for e, nothing about the operational endpoint)',
  );
  assert.equal(new Set(ops.received.map((r) => r.headers['webhook-id'])).size, ops.received.length);

  const byKey = new Map(
    events.map(({ r, event }) => [key([event.type, event.data.endpoint_id, event.data.trigger]), { r, event }]),
  );
  const failing = byKey.get(key(['message.attempt.failing', a.endpointId]))!.event;
  assert.deepEqual(
    [failing.data.app_id, failing.data.app_uid, failing.data.message_id, failing.data.delivery_id],
    [a.appId, 'acme-a', a1.messageId, a1.deliveryId],
  );
  assert.deepEqual([failing.data.last_attempt?.attempt_number, failing.data.last_attempt?.response_status], [3, 500]);
  const exhausted = byKey.get(key(['message.attempt.exhausted', a.endpointId]))!.event;
  assert.deepEqual([exhausted.data.last_attempt?.attempt_number, exhausted.data.delivery_id], [4, a1.deliveryId]);
  const recovered = byKey.get(key(['message.attempt.recovered', a.endpointId]))!.event;
  assert.deepEqual(
    [recovered.data.last_attempt?.attempt_number, recovered.data.last_attempt?.response_status],
    [5, 200],
  );
  const recoveredF = byKey.get(key(['message.attempt.recovered', f.endpointId]))!.event;
  assert.deepEqual([recoveredF.data.last_attempt?.attempt_number, recoveredF.data.message_id], [4, f1.messageId]);
  const gone = byKey.get(key(['endpoint.disabled', b.endpointId, 'gone']))!.event;
  assert.deepEqual([gone.data.app_uid, gone.data.last_attempt?.response_status], ['acme-b', 410]);
  const createdC = byKey.get(key(['endpoint.created', c.endpointId]))!.event;
  assert.deepEqual(createdC.data, {
    app_id: c.appId,
    app_uid: 'acme-c',
    endpoint_id: c.endpointId,
    endpoint_type: 'http',
  });

  // Each is an ordinary message with a delivery to the operational endpoint, readable through the API.
  const { r } = byKey.get(key(['endpoint.disabled', d.endpointId, 'failures']))!;
  const messageId = String(r.headers['webhook-id']);
  const operationalIds = new Set(ops.received.map((received) => String(received.headers['webhook-id'])));
  const deliveries = await s.api.get(`/api/v1/messages/${messageId}/deliveries`);
  assert.equal(deliveries.status, 200);
  assert.equal(deliveries.body.data.length, 1);
  const delivery = await s.delivery(deliveries.body.data[0].id);
  assert.deepEqual([delivery.endpoint_id, delivery.status, delivery.attempts.length], [op.id, 'success', 1]);
  // The environment's lists show its applications' traffic only; the operational endpoint's filter shows its own.
  const listedMessages = await s.api.get('/api/v1/messages?limit=50');
  assert.ok(listedMessages.body.data.length > 0);
  assert.ok(listedMessages.body.data.every((m: { id: string }) => !operationalIds.has(m.id)));
  const listedDeliveries = await s.api.get('/api/v1/deliveries?limit=250');
  assert.ok(listedDeliveries.body.data.length > 0);
  assert.ok(listedDeliveries.body.data.every((d: { endpoint_id: string }) => d.endpoint_id !== op.id));
  const opDeliveries = await s.api.get(`/api/v1/deliveries?endpoint_id=${op.id}&limit=250`);
  assert.equal(opDeliveries.body.data.length, operationalIds.size);

  // Deleting the operational endpoint raises nothing, and it is gone.
  assert.equal((await s.api.delete(`/api/v1/operational-endpoints/${op.id}`)).status, 204);
  assert.equal((await s.api.delete(`/api/v1/operational-endpoints/${op.id}`)).status, 404);
  assert.equal((await s.api.get('/api/v1/operational-endpoints')).body.data.length, 0);
  await sleep(500);
  assert.equal(ops.received.length, expected.length);
});

test('operational endpoints: event_types filter, retries of a failing receiver, the environment of what they describe', {
  timeout: 60_000,
}, async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s,100ms,100ms' });
  // The operational receiver fails each event's first request: the retry delivers it, under the same id.
  const seen = new Set<string>();
  const ops = await startReceiver(t, (r) => {
    const id = String(r.headers['webhook-id']);
    if (seen.has(id)) return { status: 204 };
    seen.add(id);
    return { status: 503 };
  });
  const filtered = await startReceiver(t);
  const all = await s.api.post('/api/v1/operational-endpoints', { url: `${ops.url}/all` });
  assert.equal(all.status, 201);
  const onlyDeleted = await s.api.post('/api/v1/operational-endpoints', {
    url: `${filtered.url}/deleted`,
    event_types: ['endpoint.deleted'],
  });
  assert.equal(onlyDeleted.status, 201);
  assert.deepEqual(onlyDeleted.body.event_types, ['endpoint.deleted']);
  // Live's own operational endpoint (Live takes https URLs only, so nothing here answers it): it must
  // get no delivery of a Test occurrence.
  const liveOp = await s.live.post('/api/v1/operational-endpoints', { url: 'https://ops.example.com/live' });
  assert.equal(liveOp.status, 201, JSON.stringify(liveOp.body));

  const endpoint = await s.endpoint(`${ops.url}/customer`);
  assert.equal((await s.api.delete(`/api/v1/endpoints/${endpoint.id}`)).status, 204);
  // An application deleted with its endpoint: endpoint.deleted too.
  const other = await s.api.post('/api/v1/applications', { name: 'Other', uid: 'other' });
  const otherEndpoint = await s.api.post('/api/v1/endpoints', { app_id: other.body.id, url: `${ops.url}/other` });
  assert.equal((await s.api.delete(`/api/v1/applications/${other.body.id}`)).status, 204);

  // Four occurrences, each sent twice under its one id (the failed request, then its retry).
  const count = (id: string) => ops.received.filter((r) => r.headers['webhook-id'] === id).length;
  await eventually(async () => seen.size === 4 && [...seen].every((id) => count(id) === 2), 10_000, 'retried');
  await filtered.waitFor(2, 10_000);
  await sleep(500);
  assert.equal(ops.received.length, 8);
  const events = (received: Received[]) => received.map((r) => JSON.parse(r.body) as OpEvent);
  assert.deepEqual(
    [...new Set(events(ops.received).map((e) => `${e.type} ${e.data.endpoint_id}`))].sort(),
    [
      `endpoint.created ${endpoint.id}`,
      `endpoint.created ${otherEndpoint.body.id}`,
      `endpoint.deleted ${endpoint.id}`,
      `endpoint.deleted ${otherEndpoint.body.id}`,
    ].sort(),
  );
  assert.deepEqual(
    events(filtered.received)
      .map((e) => `${e.type} ${e.data.endpoint_id} ${e.data.app_uid}`)
      .sort(),
    [`endpoint.deleted ${endpoint.id} null`, `endpoint.deleted ${otherEndpoint.body.id} other`].sort(),
    'the filter keeps endpoint.created away',
  );
  const liveDeliveries = await s.live.get(`/api/v1/deliveries?endpoint_id=${liveOp.body.id}`);
  assert.equal(liveDeliveries.status, 200);
  assert.equal(liveDeliveries.body.data.length, 0, 'a Test occurrence is not raised in Live');

  // Bad input: 4xx envelope, nothing stored.
  for (const body of [{ url: `${ops.url}/x`, event_types: ['invoice.paid'] }, { url: 'not a url' }]) {
    const reply = await s.api.post('/api/v1/operational-endpoints', body);
    assert.equal(reply.status, 400, JSON.stringify(body));
    assert.equal(typeof reply.body.error.code, 'string');
  }
  const live400 = await s.live.post('/api/v1/operational-endpoints', { url: 'http://ops.example.com/plain' });
  assert.equal(live400.status, 400, 'Live takes https URLs only, as its endpoints do');
  assert.equal((await s.api.get('/api/v1/operational-endpoints')).body.data.length, 2);
  assert.equal((await s.live.get('/api/v1/operational-endpoints')).body.data.length, 1);

  // An operational endpoint is updated through its own route: disabled, then enabled again (as one that a
  // 410 or HERALD_DISABLE_AFTER disabled is), its description and event types changed; an application's
  // endpoint is not one, and bad input changes nothing.
  const patch = (id: string, body: object) => s.api.patch(`/api/v1/operational-endpoints/${id}`, body);
  const off = await patch(onlyDeleted.body.id, { status: 'disabled', description: 'Deletions' });
  assert.equal(off.status, 200, JSON.stringify(off.body));
  assert.deepEqual([off.body.status, off.body.description], ['disabled', 'Deletions']);
  assert.equal(off.body.signing_secret, undefined, 'the secret is not shown again');
  const on = await patch(onlyDeleted.body.id, {
    status: 'active',
    event_types: ['endpoint.deleted', 'endpoint.created'],
  });
  assert.deepEqual([on.body.status, on.body.event_types], ['active', ['endpoint.deleted', 'endpoint.created']]);
  assert.equal((await patch(onlyDeleted.body.id, { event_types: ['invoice.paid'] })).status, 400);
  assert.equal((await patch(onlyDeleted.body.id, { url: 'not a url' })).status, 400);
  const appEndpoint = await s.endpoint(`${ops.url}/customer-2`);
  assert.equal((await patch(appEndpoint.id, { description: 'x' })).status, 404);
  assert.equal(
    (await s.live.patch(`/api/v1/operational-endpoints/${onlyDeleted.body.id}`, { description: 'x' })).status,
    404,
  );
  const kept = (await s.api.get('/api/v1/operational-endpoints')).body.data.find(
    (e: { id: string }) => e.id === onlyDeleted.body.id,
  );
  assert.deepEqual([kept.description, kept.event_types], ['Deletions', ['endpoint.deleted', 'endpoint.created']]);

  // An environment has at most MAX_OPERATIONAL_ENDPOINTS: one more is 409 and stores nothing.
  for (let n = 2; n < MAX_OPERATIONAL_ENDPOINTS; n++)
    assert.equal((await s.api.post('/api/v1/operational-endpoints', { url: `${ops.url}/more-${n}` })).status, 201);
  const over = await s.api.post('/api/v1/operational-endpoints', { url: `${ops.url}/one-too-many` });
  assert.equal(over.status, 409);
  assert.equal(over.body.error.code, 'conflict');
  assert.match(over.body.error.message, new RegExp(`${MAX_OPERATIONAL_ENDPOINTS} operational endpoints`));
  const listed = await s.api.get('/api/v1/operational-endpoints');
  assert.equal(listed.body.data.length, MAX_OPERATIONAL_ENDPOINTS);
});
