import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gapMs, oldestFirst, setup, startReceiver } from '../../support/delivery.js';
import type { Received } from '../../support/receiver.js';

// Delivery policy per endpoint (decisions, "Delivery policy"): an endpoint's own retry schedule, and a
// message's deliver_at holding its first attempts.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const markOf = (r: Received) => (JSON.parse(r.body) as { data: { mark: string } }).data.mark;

test("an endpoint's retry_schedule decides its attempts and their delays; null follows the service's", async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s,200ms,200ms' });
  const receiver = await startReceiver(t, () => ({ status: 500 }));
  const short = await s.endpoint(`${receiver.url}/short`, { retry_schedule: ['0s', '100ms'] });
  const long = await s.endpoint(`${receiver.url}/long`, { retry_schedule: ['0s', '100ms', '100ms', '1s', '100ms'] });
  const plain = await s.endpoint(`${receiver.url}/plain`);

  const shown = await s.api.get(`/api/v1/endpoints/${long.id}`);
  assert.deepEqual(shown.body.retry_schedule, ['0s', '100ms', '100ms', '1s', '100ms']);
  assert.equal((await s.api.get(`/api/v1/endpoints/${plain.id}`)).body.retry_schedule, null);

  const emitted = await s.emit();
  const byEndpoint = new Map<string, string>();
  for (const id of emitted.deliveryIds) byEndpoint.set((await s.delivery(id)).endpoint_id, id);
  const settled = async (endpointId: string) =>
    s.until(byEndpoint.get(endpointId)!, (d) => d.status === 'failed', 'the schedule to run out');

  const shortDone = await settled(short.id);
  assert.equal(shortDone.attempt_count, 2, 'two entries: two attempts');
  const longDone = await settled(long.id);
  assert.equal(longDone.attempt_count, 5, 'five entries: five attempts');
  const attempts = oldestFirst(longDone);
  // Each delay has ±20% jitter: the fourth waited about 1 s, the others about 100 ms.
  assert.ok(gapMs(attempts[2]!, attempts[3]!) >= 750, `the 1s step: ${gapMs(attempts[2]!, attempts[3]!)} ms`);
  assert.ok(gapMs(attempts[0]!, attempts[1]!) < 700, `a 100ms step: ${gapMs(attempts[0]!, attempts[1]!)} ms`);
  const plainDone = await settled(plain.id);
  assert.equal(plainDone.attempt_count, 3, "the service's three entries");
});

test('a schedule changed while a delivery retries applies to the attempts scheduled after the change', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s,200ms,200ms' });
  const receiver = await startReceiver(t, () => ({ status: 503 }));
  const endpoint = await s.endpoint(`${receiver.url}/changing`, { retry_schedule: ['0s', '1500ms', '1s', '1s', '1s'] });
  const { deliveryIds } = await s.emit();
  const first = await s.until(deliveryIds[0]!, (d) => d.attempt_count === 1, 'the first attempt');
  assert.equal(first.status, 'pending');
  // Its second attempt is scheduled already, 1.5 s after the first (±20%).
  const due = Date.parse(first.next_attempt_at!) - Date.parse(first.attempts[0]!.created_at);
  assert.ok(due >= 1100 && due <= 1900, `second attempt ${due} ms after the first`);

  const changed = await s.api.patch(`/api/v1/endpoints/${endpoint.id}`, { retry_schedule: ['0s', '100ms'] });
  assert.equal(changed.status, 200, JSON.stringify(changed.body));
  assert.deepEqual(changed.body.retry_schedule, ['0s', '100ms']);
  // The attempt scheduled before the change keeps its time; after it, the new schedule has no step left.
  const done = await s.until(deliveryIds[0]!, (d) => d.status === 'failed', 'the shorter schedule to run out');
  assert.equal(done.attempt_count, 2, 'the new length is the most attempts');
  const [a1, a2] = oldestFirst(done);
  assert.ok(gapMs(a1!, a2!) >= 1100, `the attempt scheduled before the change kept its time: ${gapMs(a1!, a2!)} ms`);

  const back = await s.api.patch(`/api/v1/endpoints/${endpoint.id}`, { retry_schedule: null });
  assert.equal(back.body.retry_schedule, null, 'null returns it to the service schedule');
});

test('a bad retry_schedule is refused naming the field, and nothing changes', async (t) => {
  const s = await setup(t);
  const receiver = await startReceiver(t);
  const endpoint = await s.endpoint(`${receiver.url}/kept`, { retry_schedule: ['0s', '5m'] });
  const cases: [unknown, RegExp][] = [
    [Array(21).fill('1s'), /retry_schedule/],
    [[], /retry_schedule/],
    [['0s', '8d'], /retry_schedule\[1\].*7d/],
    [['soon'], /retry_schedule\[0\]/],
    [['0s', 5], /retry_schedule/],
  ];
  for (const [schedule, message] of cases) {
    const updated = await s.api.patch(`/api/v1/endpoints/${endpoint.id}`, { retry_schedule: schedule });
    assert.equal(updated.status, 400, JSON.stringify(schedule));
    assert.equal(updated.body.error.code, 'invalid_request');
    assert.match(updated.body.error.message, message, JSON.stringify(updated.body));
    const created = await s.api.post('/api/v1/endpoints', {
      app_id: s.appId,
      url: `${receiver.url}/refused`,
      retry_schedule: schedule,
    });
    assert.equal(created.status, 400, JSON.stringify(schedule));
  }
  assert.deepEqual((await s.api.get(`/api/v1/endpoints/${endpoint.id}`)).body.retry_schedule, ['0s', '5m']);
  const listed = await s.api.get(`/api/v1/endpoints?app_id=${s.appId}`);
  assert.equal(listed.body.data.length, 1, 'no refused endpoint was made');
});

test("deliver_at holds a message's first attempts until then; past is now; too far ahead is refused", async (t) => {
  const s = await setup(t, { HERALD_MAX_DELIVER_AHEAD: '1m' });
  const receiver = await startReceiver(t);
  await s.endpoint(`${receiver.url}/held`);
  const emitAt = async (mark: string, deliverAt: string) =>
    s.api.post('/api/v1/messages', {
      app_id: s.appId,
      event_type: 'invoice.paid',
      payload: { mark },
      deliver_at: deliverAt,
    });

  const at = new Date(Date.now() + 1500);
  const held = await emitAt('held', at.toISOString());
  assert.equal(held.status, 201, JSON.stringify(held.body));
  assert.equal(held.body.deliver_at, at.toISOString());
  assert.equal((await s.api.get(`/api/v1/messages/${held.body.id}`)).body.deliver_at, at.toISOString());
  const waiting = await s.delivery(held.body.delivery_ids[0]);
  assert.equal(waiting.status, 'pending');
  assert.equal(waiting.attempt_count, 0);
  assert.equal(waiting.next_attempt_at, at.toISOString(), 'due at deliver_at');

  const past = await emitAt('past', new Date(Date.now() - 60_000).toISOString());
  assert.equal(past.status, 201);
  assert.equal(past.body.deliver_at, null, 'a time past is now');
  await receiver.waitFor(1, 5_000);
  assert.deepEqual(receiver.received.map(markOf), ['past'], 'the held message waits while the other goes');

  await receiver.waitFor(2, 10_000);
  const arrival = receiver.received.find((r) => markOf(r) === 'held')!;
  assert.ok(
    arrival.at >= at.getTime(),
    `held until ${at.toISOString()}, arrived ${new Date(arrival.at).toISOString()}`,
  );
  await s.until(held.body.delivery_ids[0], (d) => d.status === 'success', 'the held delivery');

  const before = (await s.api.get(`/api/v1/messages?app_id=${s.appId}`)).body.data.length;
  const tooFar = await emitAt('far', new Date(Date.now() + 120_000).toISOString());
  assert.equal(tooFar.status, 400);
  assert.match(tooFar.body.error.message, /deliver_at.*HERALD_MAX_DELIVER_AHEAD/);
  const unreadable = await emitAt('bad', 'next tuesday');
  assert.equal(unreadable.status, 400);
  assert.match(unreadable.body.error.message, /deliver_at/);
  assert.equal((await s.api.get(`/api/v1/messages?app_id=${s.appId}`)).body.data.length, before, 'nothing stored');
});

test('a held message goes at once when retried or replayed', async (t) => {
  const s = await setup(t);
  const receiver = await startReceiver(t);
  await s.endpoint(`${receiver.url}/held`);
  const later = new Date(Date.now() + 60 * 60_000).toISOString();
  const held = await s.api.post('/api/v1/messages', {
    app_id: s.appId,
    event_type: 'invoice.paid',
    payload: { mark: 'held' },
    deliver_at: later,
  });
  assert.equal(held.status, 201);
  const deliveryId = held.body.delivery_ids[0] as string;
  await sleep(300);
  assert.equal(receiver.received.length, 0, 'nothing before deliver_at');

  const retried = await s.api.post(`/api/v1/deliveries/${deliveryId}/retry`, {});
  assert.ok(retried.status < 300, JSON.stringify(retried.body));
  await receiver.waitFor(1, 5_000);
  const delivered = await s.until(deliveryId, (d) => d.status === 'success', 'the manual attempt');
  assert.equal(delivered.attempts[0]!.trigger, 'manual');
  assert.equal(delivered.next_attempt_at, null, 'delivered: the held scheduled attempt goes');

  const replayed = await s.api.post(`/api/v1/messages/${held.body.id}/replay`, {});
  assert.ok(replayed.status < 300, JSON.stringify(replayed.body));
  await receiver.waitFor(2, 5_000);
  assert.deepEqual(receiver.received.map(markOf), ['held', 'held']);
});

test('on a FIFO endpoint a held delivery keeps its time when its turn comes, and later ones wait behind it', async (t) => {
  const s = await setup(t);
  const receiver = await startReceiver(t);
  await s.endpoint(`${receiver.url}/fifo`, { ordering: 'fifo' });
  const emit = (mark: string, deliverAt?: Date) =>
    s.api.post('/api/v1/messages', {
      app_id: s.appId,
      event_type: 'invoice.paid',
      payload: { mark },
      ...(deliverAt ? { deliver_at: deliverAt.toISOString() } : {}),
    });
  const heldUntil = new Date(Date.now() + 1500);
  // The first goes at once; the second is parked behind it, and when unparked waits for its deliver_at;
  // the third waits behind the second.
  assert.equal((await emit('first')).status, 201);
  assert.equal((await emit('second', heldUntil)).status, 201);
  assert.equal((await emit('third')).status, 201);
  await receiver.waitFor(3, 10_000);
  assert.deepEqual(receiver.received.map(markOf), ['first', 'second', 'third']);
  const second = receiver.received[1]!;
  assert.ok(second.at >= heldUntil.getTime(), `unparked, it still waited for ${heldUntil.toISOString()}`);
  assert.ok(receiver.received[0]!.at < heldUntil.getTime() - 500, 'the first did not wait');
});
