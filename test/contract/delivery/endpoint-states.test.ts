import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { oldestFirst, setup, startReceiver } from '../../support/delivery.js';
import { eventually } from '../../support/receiver.js';

// Endpoint health follows attempts: failing after a failure, active after a success, disabled on 410
// Gone or after HERALD_DISABLE_AFTER of failure with an exhausted delivery. Deliveries for a disabled
// endpoint are recorded as `disabled`, never dropped, and a manual retry delivers them once re-enabled.

test('active → failing after a failed attempt → active again on success', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s,300ms,300ms,300ms,300ms,300ms,300ms,300ms,300ms,300ms' });
  let healthy = false;
  const receiver = await startReceiver(t, () => ({ status: healthy ? 200 : 503 }));
  const endpoint = await s.endpoint(`${receiver.url}/hook`);
  const status = async () => (await s.api.get(`/api/v1/endpoints/${endpoint.id}`)).body.status as string;
  assert.equal(await status(), 'active');
  const emitted = await s.emit();
  await eventually(async () => (await status()) === 'failing', 10_000, 'endpoint failing');
  healthy = true;
  const d = await s.until(emitted.deliveryIds[0]!, (d) => d.status === 'success', 'delivered after recovery');
  assert.ok(d.attempts.length >= 2);
  assert.equal(await status(), 'active');
});

test('410 Gone disables the endpoint; its deliveries are kept as disabled and delivered by a manual retry after re-enabling', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s,200ms,400ms' });
  let gone = true;
  const receiver = await startReceiver(t, () => ({ status: gone ? 410 : 200 }));
  const endpoint = await s.endpoint(`${receiver.url}/hook`);
  const first = await s.emit({ n: 1 });
  const firstDelivery = await s.until(
    first.deliveryIds[0]!,
    (d) => d.status === 'disabled',
    'delivery disabled by 410',
  );
  assert.equal(firstDelivery.attempts.length, 1, 'no retry after 410');
  assert.equal(firstDelivery.attempts[0]!.response_status, 410);
  assert.equal(firstDelivery.next_attempt_at, null);
  assert.equal((await s.api.get(`/api/v1/endpoints/${endpoint.id}`)).body.status, 'disabled');

  // A message for a disabled endpoint: a recorded `disabled` delivery, no request.
  const second = await s.emit({ n: 2 });
  assert.equal(second.deliveryIds.length, 1);
  const secondDelivery = await s.delivery(second.deliveryIds[0]!);
  assert.equal(secondDelivery.status, 'disabled');
  assert.equal(secondDelivery.attempts.length, 0);
  const listed = await s.api.get(`/api/v1/deliveries?endpoint_id=${endpoint.id}&status=disabled`);
  assert.equal(listed.body.data.length, 2);
  await sleep(300);
  assert.equal(receiver.received.length, 1);

  gone = false;
  const patched = await s.api.patch(`/api/v1/endpoints/${endpoint.id}`, { status: 'active' });
  assert.equal(patched.status, 200);
  assert.equal(patched.body.status, 'active');
  // Numbered after the attempts made: the first delivery's retry queued by its 410 was dropped, and its
  // number is handed out again (2, not 3).
  for (const [id, number] of [
    [first.deliveryIds[0]!, 2],
    [second.deliveryIds[0]!, 1],
  ] as const) {
    const retried = await s.api.post(`/api/v1/deliveries/${id}/retry`);
    assert.equal(retried.status, 200);
    assert.equal(retried.body.attempt_number, number);
    const d = await s.until(id, (d) => d.status === 'success', 'delivered after re-enabling');
    assert.equal(d.attempts[0]!.trigger, 'manual');
    assert.equal(d.attempts[0]!.attempt_number, number);
  }
  const payloads = receiver.received
    .slice(1)
    .map((r) => JSON.parse(r.body).data.n)
    .sort();
  assert.deepEqual(payloads, [1, 2]);
});

test('HERALD_DISABLE_AFTER of continuous failure with an exhausted delivery disables the endpoint', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s,200ms,400ms', HERALD_DISABLE_AFTER: '300ms' });
  const receiver = await startReceiver(t, () => ({ status: 500 }));
  const endpoint = await s.endpoint(`${receiver.url}/hook`);
  const emitted = await s.emit();
  const d = await s.until(emitted.deliveryIds[0]!, (d) => d.status !== 'pending', 'delivery settled');
  assert.equal(d.status, 'failed', 'the exhausted delivery itself is failed');
  assert.equal(d.attempts.length, 3);
  assert.equal((await s.api.get(`/api/v1/endpoints/${endpoint.id}`)).body.status, 'disabled');
  const next = await s.emit();
  assert.equal((await s.delivery(next.deliveryIds[0]!)).status, 'disabled');
});

test('once a delivery has used up its attempts, the first failure after HERALD_DISABLE_AFTER disables the endpoint', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s,300ms', HERALD_DISABLE_AFTER: '1s' });
  const receiver = await startReceiver(t, () => ({ status: 500 }));
  const endpoint = await s.endpoint(`${receiver.url}/hook`);
  // The first delivery uses up both attempts well inside the window.
  const first = await s.emit({ n: 1 });
  await s.until(first.deliveryIds[0]!, (d) => d.status === 'failed', 'first delivery failed');
  assert.equal((await s.api.get(`/api/v1/endpoints/${endpoint.id}`)).body.status, 'failing');
  // After the window, the second message's first attempt fails: it has a retry left, yet the endpoint is
  // disabled there, and the retry is not made (its delivery is kept as disabled).
  await sleep(1_200);
  const second = await s.emit({ n: 2 });
  const d = await s.until(second.deliveryIds[0]!, (d) => d.status !== 'pending', 'second delivery settled');
  assert.equal(d.status, 'disabled');
  assert.equal(d.attempts.length, 1);
  assert.equal((await s.api.get(`/api/v1/endpoints/${endpoint.id}`)).body.status, 'disabled');
  await sleep(500);
  assert.equal(receiver.received.length, 3, 'no retry after the endpoint was disabled');
});

test('a long failure alone does not disable: the window must pass and a delivery must exhaust its attempts', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s,200ms,400ms', HERALD_DISABLE_AFTER: '1h' });
  const receiver = await startReceiver(t, () => ({ status: 500 }));
  const endpoint = await s.endpoint(`${receiver.url}/hook`);
  const emitted = await s.emit();
  await s.until(emitted.deliveryIds[0]!, (d) => d.status === 'failed', 'delivery failed');
  assert.equal((await s.api.get(`/api/v1/endpoints/${endpoint.id}`)).body.status, 'failing');
});

test('manual retry adds exactly one attempt to the same delivery, whatever its status', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s,200ms' });
  let answer = 200;
  const receiver = await startReceiver(t, () => ({ status: answer }));
  await s.endpoint(`${receiver.url}/hook`);

  // success → one more attempt, still success
  const ok = await s.emit({ case: 'success' });
  const okId = ok.deliveryIds[0]!;
  await s.until(okId, (d) => d.status === 'success', 'first success');
  let retried = await s.api.post(`/api/v1/deliveries/${okId}/retry`);
  assert.equal(retried.status, 200);
  assert.deepEqual(retried.body, { delivery_id: okId, status: 'enqueued', attempt_number: 2 });
  let d = await s.until(okId, (d) => d.attempt_count === 2, 'manual attempt recorded');
  assert.equal(d.status, 'success');
  assert.deepEqual(
    oldestFirst(d).map((a) => [a.attempt_number, a.trigger, a.status]),
    [
      [1, 'scheduled', 'success'],
      [2, 'manual', 'success'],
    ],
  );

  // failed → one more attempt, which succeeds
  answer = 500;
  const bad = await s.emit({ case: 'failed' });
  const badId = bad.deliveryIds[0]!;
  await s.until(badId, (d) => d.status === 'failed', 'failed');
  answer = 200;
  retried = await s.api.post(`/api/v1/deliveries/${badId}/retry`);
  assert.equal(retried.body.attempt_number, 3);
  d = await s.until(badId, (d) => d.status === 'success', 'manual attempt delivered');
  assert.equal(d.attempt_count, 3);
  assert.deepEqual(d.attempts[0]!.trigger, 'manual');

  // a failed manual attempt of a failed delivery leaves it failed, with nothing scheduled
  answer = 500;
  const bad2 = await s.emit({ case: 'failed-again' });
  await s.until(bad2.deliveryIds[0]!, (d) => d.status === 'failed', 'failed');
  await s.api.post(`/api/v1/deliveries/${bad2.deliveryIds[0]}/retry`);
  d = await s.until(bad2.deliveryIds[0]!, (d) => d.attempt_count === 3, 'manual attempt recorded');
  assert.equal(d.status, 'failed');
  assert.equal(d.next_attempt_at, null);

  const before = receiver.received.length;
  await sleep(600);
  assert.equal(receiver.received.length, before, 'a manual retry does not restart the schedule');
});

test('manual retries of a pending delivery each add one attempt, numbered apart, and leave the schedule as it was', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s,1h' });
  let answer = 500;
  const receiver = await startReceiver(t, () => ({ status: answer }));
  await s.endpoint(`${receiver.url}/hook`);
  const emitted = await s.emit();
  const id = emitted.deliveryIds[0]!;
  const waiting = await s.until(id, (d) => d.attempt_count === 1, 'first attempt');
  assert.equal(waiting.status, 'pending');
  assert.ok(waiting.next_attempt_at && Date.parse(waiting.next_attempt_at) > Date.now() + 30 * 60_000);

  // Four at once: each gets its own number, in the order they go out: before the scheduled attempt still
  // waiting (queued as #2), which moves back behind them.
  const retries = await Promise.all(Array.from({ length: 4 }, () => s.api.post(`/api/v1/deliveries/${id}/retry`)));
  assert.deepEqual(retries.map((r) => r.body.attempt_number).sort(), [2, 3, 4, 5]);
  let d = await s.until(id, (d) => d.attempt_count === 5, 'manual attempts');
  assert.equal(d.status, 'pending');
  assert.equal(d.next_attempt_at, waiting.next_attempt_at, 'scheduled attempt untouched');
  assert.equal(receiver.received.length, 5);

  answer = 200;
  await s.api.post(`/api/v1/deliveries/${id}/retry`);
  d = await s.until(id, (d) => d.status === 'success', 'manual attempt delivered');
  assert.equal(d.next_attempt_at, null, 'delivered: the scheduled attempt is no longer needed');
  const numbered = d.attempts.map((a) => [a.attempt_number, a.trigger]).sort((a, b) => Number(a[0]) - Number(b[0]));
  // No gap where the scheduled attempt, no longer needed, was dropped.
  assert.deepEqual(numbered, [
    [1, 'scheduled'],
    [2, 'manual'],
    [3, 'manual'],
    [4, 'manual'],
    [5, 'manual'],
    [6, 'manual'],
  ]);
});

test('a manual retry while a scheduled attempt waits is numbered before it: the attempts read in time order', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s,3s,1h' });
  const receiver = await startReceiver(t, () => ({ status: 500 }));
  await s.endpoint(`${receiver.url}/hook`);
  const id = (await s.emit()).deliveryIds[0]!;
  const waiting = await s.until(id, (d) => d.attempt_count === 1, 'first attempt');
  const retried = await s.api.post(`/api/v1/deliveries/${id}/retry`);
  assert.equal(retried.body.attempt_number, 2);
  const d = await s.until(id, (d) => d.attempt_count === 3, 'the manual attempt, then the scheduled one', 10_000);
  const inTime = oldestFirst(d);
  assert.deepEqual(
    inTime.map((a) => [a.attempt_number, a.trigger]),
    [
      [1, 'scheduled'],
      [2, 'manual'],
      [3, 'scheduled'],
    ],
  );
  for (let i = 1; i < inTime.length; i++)
    assert.ok(Date.parse(inTime[i]!.created_at) >= Date.parse(inTime[i - 1]!.created_at));
  assert.ok(
    Date.parse(inTime[2]!.created_at) >= Date.parse(waiting.next_attempt_at!) - 50,
    'the scheduled attempt kept its time',
  );
  // The next scheduled attempt follows on from there.
  const next = await s.api.post(`/api/v1/deliveries/${id}/retry`);
  assert.equal(next.body.attempt_number, 4);
});

test('replay creates new deliveries for the endpoints subscribed now, with the event-type filter applied', async (t) => {
  const s = await setup(t);
  const receiver = await startReceiver(t);
  const early = await s.endpoint(`${receiver.url}/early`);
  const emitted = await s.emit({ n: 1 }, 'invoice.paid');
  await receiver.waitFor(1);
  const late = await s.endpoint(`${receiver.url}/late`, { event_types: ['invoice.paid'] });
  const filtered = await s.endpoint(`${receiver.url}/filtered`, { event_types: ['customer.created'] });

  const replayed = await s.api.post(`/api/v1/messages/${emitted.id}/replay`);
  assert.equal(replayed.status, 200);
  assert.equal(replayed.body.status, 'enqueued');
  assert.equal(replayed.body.delivery_ids.length, 2);
  const endpointsReached = [];
  for (const id of replayed.body.delivery_ids) {
    assert.ok(!emitted.deliveryIds.includes(id));
    endpointsReached.push((await s.until(id, (d) => d.status === 'success', 'replayed delivery')).endpoint_id);
  }
  assert.deepEqual(endpointsReached.sort(), [early.id, late.id].sort());
  assert.equal(receiver.received.filter((r) => r.path === '/late').length, 1);
  assert.equal(receiver.received.filter((r) => r.path === '/early').length, 2);
  assert.equal(receiver.received.filter((r) => r.path === '/filtered').length, 0);
  assert.ok(filtered.id);
  const all = await s.api.get(`/api/v1/messages/${emitted.id}/deliveries`);
  assert.equal(all.body.data.length, 3);
});
