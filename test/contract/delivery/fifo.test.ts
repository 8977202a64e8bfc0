import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, startReceiver } from '../../support/delivery.js';
import { child, database, receiver } from '../../support/burst.js';
import { eventually, type Received } from '../../support/receiver.js';
import { bootstrap } from '../../support/client.js';

// `ordering: "fifo"`: the endpoint receives its deliveries in creation order, one request at a time; a
// delivery that keeps failing holds the later ones back until it succeeds (or runs out of attempts).

const MESSAGES = 5;

/** The payload's `i` of each request, in arrival order. */
const sequence = (requests: Received[]) => requests.map((r) => (JSON.parse(r.body) as { data: { i: number } }).data.i);

/** A receiver that fails the first message three times, then takes everything. */
function failFirstThreeTimes() {
  let failures = 0;
  return (r: Received) => {
    if ((JSON.parse(r.body) as { data: { i: number } }).data.i === 0 && failures < 3) {
      failures++;
      return { status: 500 };
    }
    return { status: 200 };
  };
}

function assertInOrder(requests: Received[]): void {
  const seen = sequence(requests);
  const firsts = seen.filter((i, n) => seen.indexOf(i) === n);
  assert.deepEqual(firsts, [...Array(MESSAGES).keys()], `first arrivals in creation order: ${seen.join(',')}`);
  // One at a time: once a later message has arrived, no earlier one comes again.
  for (let n = 1; n < seen.length; n++)
    assert.ok(seen[n]! >= seen[n - 1]!, `message ${seen[n]} after ${seen[n - 1]}: ${seen.join(',')}`);
  assert.equal(seen.filter((i) => i === 0).length, 4, 'the first message: three failures, then its success');
}

test('a FIFO endpoint gets its messages in order, once each, the failing first one holding the rest back', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s,100ms,100ms,100ms,100ms' });
  const hooks = await startReceiver(t, failFirstThreeTimes());
  const made = await s.api.post('/api/v1/endpoints', { app_id: s.appId, url: `${hooks.url}/fifo`, ordering: 'fifo' });
  assert.equal(made.status, 201);
  assert.equal(made.body.ordering, 'fifo');
  const emitted = [];
  for (let i = 0; i < MESSAGES; i++) emitted.push(await s.emit({ i }));
  // Waiting behind the first: not yet due, so no next attempt time to show.
  const waiting = await s.delivery(emitted[MESSAGES - 1]!.deliveryIds[0]!);
  assert.equal(waiting.status, 'pending');
  await hooks.waitFor(MESSAGES + 3, 20_000);
  await new Promise((resolve) => setTimeout(resolve, 300));
  assertInOrder(hooks.received);
  for (const e of emitted) await s.until(e.deliveryIds[0]!, (d) => d.status === 'success', 'delivered');
});

test('two worker processes keep a FIFO endpoint in order, one request at a time', async (t) => {
  const db = await database(t);
  const hooks = await receiver(t, failFirstThreeTimes());
  const env = { ...db.env, HERALD_RETRY_SCHEDULE: '0s,100ms,100ms,100ms,100ms' };
  const api = await child(t, { ...env, HERALD_ROLE: 'api' });
  await child(t, { ...env, HERALD_ROLE: 'worker' });
  await child(t, { ...env, HERALD_ROLE: 'worker' });
  const { test: client } = await bootstrap(api.url!);
  const app = await client.post('/api/v1/applications', { name: 'fifo' });
  await client.post('/api/v1/endpoints', { app_id: app.body.id, url: `${hooks.url}/fifo`, ordering: 'fifo' });
  // One at a time, so that creation order is emit order.
  for (let i = 0; i < MESSAGES; i++) {
    const reply = await client.post('/api/v1/messages', {
      app_id: app.body.id,
      event_type: 'invoice.paid',
      payload: { i },
    });
    assert.equal(reply.status, 201);
  }
  await eventually(async () => hooks.received.length >= MESSAGES + 3, 30_000, 'every message delivered');
  await new Promise((resolve) => setTimeout(resolve, 500));
  assertInOrder(hooks.received);
});

test('made unordered, a FIFO endpoint sends what waited at once', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s,1h' });
  const hooks = await startReceiver(t, () => ({ status: 500 }));
  const made = await s.api.post('/api/v1/endpoints', { app_id: s.appId, url: `${hooks.url}/f`, ordering: 'fifo' });
  for (let i = 0; i < 3; i++) await s.emit({ i });
  await hooks.waitFor(1);
  await new Promise((resolve) => setTimeout(resolve, 700));
  assert.deepEqual(sequence(hooks.received), [0], 'the first failed and retries in an hour; the rest wait');
  const changed = await s.api.patch(`/api/v1/endpoints/${made.body.id}`, { ordering: 'unordered' });
  assert.equal(changed.body.ordering, 'unordered');
  await hooks.waitFor(3, 5_000);
  assert.deepEqual(sequence(hooks.received).sort(), [0, 1, 2]);
  assert.equal(
    (await s.api.post('/api/v1/endpoints', { app_id: s.appId, url: `${hooks.url}/x`, ordering: 'lifo' })).status,
    400,
  );
});
