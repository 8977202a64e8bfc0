import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { setup, startReceiver, verifies, verifyWithLibraries } from '../../support/delivery.js';
import { eventually } from '../../support/receiver.js';

// What a receiver sees: Standard Webhooks requests that third-party verifiers accept, with the message id
// as webhook-id on every attempt, manual retry and replay, and every secret still in a rotation's grace.

test('emit is delivered at once as a signed Standard Webhooks request', async (t) => {
  // HERALD_ROLE=all: the emit wakes the in-process worker (no timing is asserted, only the arrival).
  const s = await setup(t, { HERALD_ROLE: 'all' });
  const receiver = await startReceiver(t);
  const endpoint = await s.endpoint(`${receiver.url}/hook`);
  // Let the worker go idle first, so the delivery depends on the emit waking it.
  await sleep(50);
  const emitted = await s.emit({ amount: 42, note: 'héllo ✓' });
  await receiver.waitFor(1);

  const r = receiver.received[0]!;
  assert.equal(r.path, '/hook');
  assert.equal(r.headers['webhook-id'], emitted.id);
  assert.match(String(r.headers['webhook-timestamp']), /^\d{10}$/);
  assert.ok(Math.abs(Number(r.headers['webhook-timestamp']) - Date.now() / 1000) < 300);
  assert.match(String(r.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]+=*$/);
  assert.equal(r.headers['content-type'], 'application/json');
  assert.match(String(r.headers['user-agent']), /Herald/);

  const body = JSON.parse(r.body);
  assert.deepEqual(Object.keys(body), ['type', 'timestamp', 'data']);
  assert.equal(body.type, 'invoice.paid');
  assert.deepEqual(body.data, { amount: 42, note: 'héllo ✓' });
  const message = await s.api.get(`/api/v1/messages/${emitted.id}`);
  assert.equal(body.timestamp, message.body.created_at);

  // Third-party verifiers accept it with the endpoint's secret, and refuse another secret or a changed body.
  const [fromStandard, fromSvix] = verifyWithLibraries(r, endpoint.secret) as unknown[];
  assert.deepEqual(fromStandard, body);
  assert.deepEqual(fromSvix, body);
  assert.equal(verifies(r, `whsec_${Buffer.alloc(24, 1).toString('base64')}`), false);
  assert.equal(verifies({ ...r, body: r.body.replace('42', '43') }, endpoint.secret), false);

  const delivery = await s.until(emitted.deliveryIds[0]!, (d) => d.status === 'success', 'success');
  assert.equal(delivery.attempt_count, 1);
  assert.equal(delivery.next_attempt_at, null);
});

test('webhook-id is the message id on scheduled retries, manual retries and replays; each request verifies', async (t) => {
  const s = await setup(t);
  let calls = 0;
  // Fail the first two (scheduled retries happen), then accept.
  const receiver = await startReceiver(t, () => (++calls <= 2 ? { status: 500 } : { status: 204 }));
  const endpoint = await s.endpoint(`${receiver.url}/hook`);
  const emitted = await s.emit({ n: 7 });
  const deliveryId = emitted.deliveryIds[0]!;
  await s.until(deliveryId, (d) => d.status === 'success', 'success after retries');
  assert.equal(receiver.received.length, 3);

  const retried = await s.api.post(`/api/v1/deliveries/${deliveryId}/retry`);
  assert.equal(retried.status, 200);
  const replayed = await s.api.post(`/api/v1/messages/${emitted.id}/replay`);
  assert.equal(replayed.status, 200);
  assert.equal(replayed.body.delivery_ids.length, 1);
  assert.notEqual(replayed.body.delivery_ids[0], deliveryId);
  await receiver.waitFor(5);

  const ids = new Set(receiver.received.map((r) => r.headers['webhook-id']));
  assert.deepEqual([...ids], [emitted.id]);
  for (const r of receiver.received) verifyWithLibraries(r, endpoint.secret);
  // Every attempt is signed at its own time; the body (and so the message) is the same.
  assert.equal(new Set(receiver.received.map((r) => r.body)).size, 1);
});

test('send-test goes through the same pipeline and arrives signed', async (t) => {
  const s = await setup(t);
  const receiver = await startReceiver(t);
  const endpoint = await s.endpoint(`${receiver.url}/hook`);
  const sent = await s.api.post('/api/v1/messages/send-test', { app_id: s.appId });
  assert.equal(sent.status, 202);
  assert.equal(sent.body.delivery_ids.length, 1);
  await receiver.waitFor(1);
  const r = receiver.received[0]!;
  assert.equal(r.headers['webhook-id'], sent.body.id);
  const body = verifyWithLibraries(r, endpoint.secret) as { type: string; data: unknown }[];
  assert.equal(body[0]!.type, 'invoice.paid');
  const catalog = await s.api.get('/api/v1/event-types');
  const example = catalog.body.data.find((e: { name: string }) => e.name === 'invoice.paid').example_json;
  assert.deepEqual(body[0]!.data, example);
  await s.until(sent.body.delivery_ids[0], (d) => d.status === 'success', 'send-test delivery success');
});

test('rotation: one signature per secret in its grace, each verifying alone; only the newest afterwards', async (t) => {
  const s = await setup(t, { HERALD_SECRET_GRACE: '1s' });
  const receiver = await startReceiver(t);
  const endpoint = await s.endpoint(`${receiver.url}/hook`);
  // Rotated twice in a row: the first rotation promised the original secret its grace, and the second
  // does not cut it short.
  const rotated = await s.api.post(`/api/v1/endpoints/${endpoint.id}/rotate-secret`);
  assert.equal(rotated.status, 200);
  const middle = rotated.body.signing_secret as string;
  const again = await s.api.post(`/api/v1/endpoints/${endpoint.id}/rotate-secret`);
  const fresh = again.body.signing_secret as string;
  assert.equal(new Set([endpoint.secret, middle, fresh]).size, 3);
  const graceEnds = Date.parse(again.body.previous_valid_until);

  await s.emit({ phase: 'grace' });
  await receiver.waitFor(1);
  const during = receiver.received[0]!;
  const signatures = String(during.headers['webhook-signature']).split(' ');
  assert.equal(signatures.length, 3, 'three signatures during the grace period');
  for (const secret of [fresh, middle, endpoint.secret]) assert.ok(verifies(during, secret));
  // Each signature alone is valid for exactly one of the secrets.
  for (const signature of signatures) {
    const alone = { ...during, headers: { ...during.headers, 'webhook-signature': signature } };
    assert.equal(
      [verifies(alone, fresh), verifies(alone, middle), verifies(alone, endpoint.secret)].filter(Boolean).length,
      1,
    );
  }

  await eventually(async () => Date.now() > graceEnds + 100, 5_000, 'grace to end');
  await s.emit({ phase: 'after' });
  await receiver.waitFor(2);
  const after = receiver.received[1]!;
  assert.equal(String(after.headers['webhook-signature']).split(' ').length, 1, 'one signature after the grace');
  assert.ok(verifies(after, fresh));
  assert.equal(verifies(after, middle) || verifies(after, endpoint.secret), false, 'old secrets no longer verify');
});
