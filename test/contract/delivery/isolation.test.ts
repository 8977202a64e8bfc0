import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, SocketReceiver, verifies } from '../../support/delivery.js';
import { eventually } from '../../support/receiver.js';
import type { TestContext } from 'node:test';

// A slow or silent endpoint only ever holds its own slots: deliveries to healthy endpoints go on while
// it hangs, even on the same host. Each endpoint has at most HERALD_ENDPOINT_CONCURRENCY requests open,
// and connections are reused.

async function socketReceiver(t: TestContext, holdMs: (path: string) => number): Promise<SocketReceiver> {
  const receiver = await new SocketReceiver().start();
  receiver.holdMs = holdMs;
  t.after(() => receiver.stop());
  return receiver;
}

test('a slow endpoint and a silent one do not delay a healthy endpoint', async (t) => {
  const s = await setup(t, {
    HERALD_ENDPOINT_CONCURRENCY: '2',
    HERALD_CONCURRENCY: '8',
    HERALD_ATTEMPT_TIMEOUT: '30s',
  });
  const slow = await socketReceiver(t, () => 10_000);
  const silent = await socketReceiver(t, () => Infinity);
  const healthy = await socketReceiver(t, () => 0);
  await s.endpoint(`${slow.url}/slow`);
  await s.endpoint(`${silent.url}/silent`);
  await s.endpoint(`${healthy.url}/healthy`);
  const messages = 12;
  // Emitting first to the stuck endpoints lines their attempts up ahead of the healthy ones.
  for (let i = 0; i < messages; i++) await s.emit({ i });
  await eventually(async () => healthy.requests.length >= messages, 20_000, 'healthy endpoint to get every message');
  // Ordering, not timing: all of that happened while the slow and silent endpoints still held every request.
  assert.ok(slow.requests.length >= 1 && slow.open === slow.requests.length, 'slow endpoint has answered nothing yet');
  assert.ok(
    silent.requests.length >= 1 && silent.open === silent.requests.length,
    'silent endpoint has answered nothing',
  );
  assert.ok(slow.maxOpen <= 2 && silent.maxOpen <= 2, 'the stuck endpoints never held more than their share');
  // Hung-up receivers end the stuck attempts, so the service stops without waiting for their timeout.
  await Promise.all([slow.stop(), silent.stop()]);
});

test('a hanging endpoint does not delay another endpoint on the same host', async (t) => {
  const s = await setup(t, { HERALD_ENDPOINT_CONCURRENCY: '2', HERALD_ATTEMPT_TIMEOUT: '30s' });
  const receiver = await socketReceiver(t, (path) => (path.startsWith('/hang') ? Infinity : 0));
  await s.endpoint(`${receiver.url}/hang`);
  await s.endpoint(`${receiver.url}/ok`);
  const messages = 6;
  for (let i = 0; i < messages; i++) await s.emit({ i });
  await eventually(
    async () => receiver.count('/ok') >= messages,
    20_000,
    'the healthy endpoint on the same host to get every message',
  );
  assert.equal(receiver.count('/hang'), 2, 'the hanging endpoint holds its two slots and no more');
  await receiver.stop();
});

test('per-endpoint concurrency is bounded by HERALD_ENDPOINT_CONCURRENCY and connections are reused', async (t) => {
  const s = await setup(t, { HERALD_ENDPOINT_CONCURRENCY: '2' });
  const receiver = await socketReceiver(t, () => 150);
  await s.endpoint(`${receiver.url}/hook`);
  const messages = 16;
  await Promise.all(Array.from({ length: messages }, (_, i) => s.emit({ i })));
  await eventually(
    async () => receiver.requests.length >= messages && receiver.open === 0,
    30_000,
    'every message delivered',
  );
  assert.ok(receiver.maxOpen <= 2, `at most 2 requests open at once (saw ${receiver.maxOpen})`);
  assert.equal(receiver.maxOpen, 2, 'the two slots were used in parallel');
  assert.ok(
    receiver.sockets.size < receiver.requests.length,
    `connections reused: ${receiver.sockets.size} sockets for ${receiver.requests.length} requests`,
  );
  assert.ok(receiver.sockets.size <= 4, `few sockets: ${receiver.sockets.size}`);
});

test('a backlog for a stuck endpoint does not fill the worker: a healthy endpoint behind it is still served', async (t) => {
  // Few slots overall, one per endpoint, and every first attempt held back for an hour so the test can
  // release the whole backlog at once (as after an outage): the stuck endpoint's 30 attempts come first.
  const s = await setup(t, {
    HERALD_CONCURRENCY: '3',
    HERALD_ENDPOINT_CONCURRENCY: '1',
    HERALD_ATTEMPT_TIMEOUT: '30s',
    HERALD_RETRY_SCHEDULE: '1h',
  });
  const stuck = await socketReceiver(t, () => Infinity);
  const healthy = await socketReceiver(t, () => 0);
  const stuckEndpoint = await s.endpoint(`${stuck.url}/stuck`, { event_types: ['customer.created'] });
  await s.endpoint(`${healthy.url}/healthy`, { event_types: ['invoice.paid'] });
  for (let i = 0; i < 30; i++) await s.emit({ i }, 'customer.created');
  for (let i = 0; i < 5; i++) await s.emit({ i }, 'invoice.paid');
  const db = s.service.store.ctx.db;
  const now = Date.now();
  await db.transaction().execute(async (trx) => {
    // Both due within the last second, so the next claim reads them all (its window starts a second before
    // the last claim), the stuck ones first.
    await trx
      .updateTable('deliveries')
      .set({ run_at: now - 600 })
      .where('endpoint_id', '=', stuckEndpoint.id)
      .where('run_at', 'is not', null)
      .execute();
    await trx
      .updateTable('deliveries')
      .set({ run_at: now - 500 })
      .where('endpoint_id', '!=', stuckEndpoint.id)
      .where('run_at', 'is not', null)
      .execute();
  });
  await eventually(async () => healthy.requests.length >= 5, 20_000, 'healthy endpoint served despite the backlog');
  assert.equal(stuck.requests.length, 1, 'the stuck endpoint holds its single slot');
  await stuck.stop();
});

test('a backlog for one endpoint drains without waiting for the idle poll between top-ups', async (t) => {
  // Every first attempt held back for an hour, then released at once: 240 due attempts for one endpoint
  // with four slots, so the worker tops the endpoint up again and again while attempts keep finishing.
  const s = await setup(t, { HERALD_ENDPOINT_CONCURRENCY: '4', HERALD_RETRY_SCHEDULE: '1h' });
  const receiver = await socketReceiver(t, () => 0);
  const endpoint = await s.endpoint(`${receiver.url}/hook`);
  const messages = 240;
  for (let i = 0; i < messages; i += 20) await Promise.all(Array.from({ length: 20 }, (_, j) => s.emit({ i: i + j })));
  // Claims answer 30 ms late (a busy database), so attempts keep finishing while a top-up is under way.
  const queue = s.service.store.queue;
  const slow =
    <A extends unknown[], R>(claim: (...args: A) => Promise<R>) =>
    async (...args: A) => {
      const result = await claim.apply(queue, args);
      await new Promise((resolve) => setTimeout(resolve, 30));
      return result;
    };
  queue.claim = slow(queue.claim);
  queue.claimLoaded = slow(queue.claimLoaded);
  const db = s.service.store.ctx.db;
  await db
    .updateTable('deliveries')
    .set({ run_at: Date.now() - 500 })
    .where('endpoint_id', '=', endpoint.id)
    .where('run_at', 'is not', null)
    .execute();
  // The first claim may wait for one idle poll (nothing announced the released backlog).
  await eventually(async () => receiver.requests.length >= 1, 5_000, 'the first attempt');
  await eventually(async () => receiver.requests.length >= messages, 60_000, 'every message delivered');
  // A top-up that is not followed by the next one when the endpoint drains leaves the worker asleep until
  // its 500 ms poll: a gap of ~0.5 s between two requests, many times over. Claims take ~30 ms here.
  const gaps = receiver.requests.slice(1).map((r, i) => r.at - receiver.requests[i]!.at);
  const long = gaps.filter((gap) => gap >= 400);
  assert.ok(long.length <= 1, `requests waited for the idle poll ${long.length} times: ${long.join(', ')} ms`);
  assert.ok(receiver.maxOpen <= 4, `at most 4 requests open at once (saw ${receiver.maxOpen})`);
});

test("a backlog draining through top-ups does not hold back another endpoint's attempt that comes due without a wake", async (t) => {
  // One slot per endpoint and a receiver that answers in 30 ms: the backlog's endpoint drains one attempt
  // at a time, each finish topping it up and waking the claim loop. The other endpoint's attempt comes due
  // with no wake (as a retry does); only a general claim takes it, and the wakes must not keep postponing it.
  const s = await setup(t, { HERALD_ENDPOINT_CONCURRENCY: '1', HERALD_RETRY_SCHEDULE: '1h' });
  const receiver = await socketReceiver(t, (path) => (path.startsWith('/backlog') ? 30 : 0));
  const backlogEndpoint = await s.endpoint(`${receiver.url}/backlog`, { event_types: ['customer.created'] });
  const otherEndpoint = await s.endpoint(`${receiver.url}/other`, { event_types: ['invoice.paid'] });
  const backlog = 150;
  for (let i = 0; i < backlog; i += 20)
    await Promise.all(Array.from({ length: 20 }, (_, j) => s.emit({ i: i + j }, 'customer.created')));
  await s.emit({ other: true }, 'invoice.paid');
  const db = s.service.store.ctx.db;
  await db
    .updateTable('deliveries')
    .set({ run_at: Date.now() - 500 })
    .where('endpoint_id', '=', backlogEndpoint.id)
    .where('run_at', 'is not', null)
    .execute();
  await eventually(async () => receiver.count('/backlog') >= 10, 10_000, 'the backlog draining');
  await db
    .updateTable('deliveries')
    .set({ run_at: Date.now() - 100 })
    .where('endpoint_id', '=', otherEndpoint.id)
    .where('run_at', 'is not', null)
    .execute();
  await eventually(async () => receiver.count('/other') >= 1, 10_000, "the other endpoint's attempt");
  // At 30 ms an attempt the backlog takes over 4.5 s; the idle poll (500 ms) comes well before it is done.
  assert.ok(
    receiver.count('/backlog') < backlog * 0.6,
    `the other attempt waited for ${receiver.count('/backlog')} of the backlog's ${backlog}`,
  );
});

test('a worker full of backlogged endpoints still serves a new endpoint before the backlogs drain', async (t) => {
  // Four slots, one per endpoint: four endpoints with 40 due attempts each fill the worker (each holds one
  // attempt in flight and one waiting). A message for a fifth endpoint must get a slot within a few
  // outcomes, not after the 160 attempts (4 s at 100 ms each, four at a time).
  const s = await setup(t, { HERALD_CONCURRENCY: '4', HERALD_ENDPOINT_CONCURRENCY: '1', HERALD_RETRY_SCHEDULE: '1h' });
  const receiver = await socketReceiver(t, (path) => (path.startsWith('/backlog') ? 100 : 0));
  const backlogged = [];
  for (let i = 0; i < 4; i++)
    backlogged.push(await s.endpoint(`${receiver.url}/backlog${i}`, { event_types: ['customer.created'] }));
  const fresh = await s.endpoint(`${receiver.url}/new`, { event_types: ['invoice.paid'] });
  const perEndpoint = 40;
  for (let i = 0; i < perEndpoint; i += 10)
    await Promise.all(Array.from({ length: 10 }, (_, j) => s.emit({ i: i + j }, 'customer.created')));
  const db = s.service.store.ctx.db;
  await db
    .updateTable('deliveries')
    .set({ run_at: Date.now() - 500 })
    .where(
      'endpoint_id',
      'in',
      backlogged.map((e) => e.id),
    )
    .where('run_at', 'is not', null)
    .execute();
  await eventually(async () => receiver.requests.length >= 12, 10_000, 'the backlogs draining');
  await s.emit({ fresh: true }, 'invoice.paid');
  await db
    .updateTable('deliveries')
    .set({ run_at: Date.now() })
    .where('endpoint_id', '=', fresh.id)
    .where('run_at', 'is not', null)
    .execute();
  await eventually(async () => receiver.count('/new') >= 1, 10_000, "the new endpoint's message");
  const before = receiver.requests.findIndex((r) => r.path.startsWith('/new'));
  // 12 were out before the emit and the worker held 8 more; the general claim runs within the idle poll
  // (500 ms, 20 attempts) and the room outcomes free goes to backlogs and new work in turn.
  assert.ok(before < 40, `the new message waited for ${before} of the backlogs' ${4 * perEndpoint} attempts`);
  assert.ok(receiver.maxOpen <= 4, `at most 4 requests open at once (saw ${receiver.maxOpen})`);
});

test('new work that fills a full worker does not starve an endpoint with a backlog', async (t) => {
  // Two slots, one per endpoint. One endpoint has 30 due attempts; then 40 other endpoints get one due
  // attempt each, more than the worker can hold. Room freed by outcomes goes to the backlog and the new
  // work in turn: the backlog keeps its one slot busy instead of waiting for all 40 to be served.
  const s = await setup(t, { HERALD_CONCURRENCY: '2', HERALD_ENDPOINT_CONCURRENCY: '1', HERALD_RETRY_SCHEDULE: '1h' });
  const receiver = await socketReceiver(t, () => 50);
  const backlogged = await s.endpoint(`${receiver.url}/backlog`, { event_types: ['customer.created'] });
  for (let i = 0; i < 40; i++) await s.endpoint(`${receiver.url}/other${i}`, { event_types: ['invoice.paid'] });
  for (let i = 0; i < 30; i += 10)
    await Promise.all(Array.from({ length: 10 }, (_, j) => s.emit({ i: i + j }, 'customer.created')));
  await s.emit({ many: true }, 'invoice.paid');
  const db = s.service.store.ctx.db;
  const now = Date.now();
  await db.transaction().execute(async (trx) => {
    // Within the general claim's window, the backlog's first.
    await trx
      .updateTable('deliveries')
      .set({ run_at: now - 600 })
      .where('endpoint_id', '=', backlogged.id)
      .where('run_at', 'is not', null)
      .execute();
    await trx
      .updateTable('deliveries')
      .set({ run_at: now - 500 })
      .where('endpoint_id', '!=', backlogged.id)
      .where('run_at', 'is not', null)
      .execute();
  });
  await eventually(async () => receiver.count('/other') >= 40, 20_000, 'every other endpoint served');
  const paths = receiver.requests.map((r) => r.path);
  const firstOther = paths.findIndex((path) => path.startsWith('/other'));
  const lastOther = paths.length - 1 - [...paths].reverse().findIndex((path) => path.startsWith('/other'));
  const backlogMeanwhile = paths.slice(firstOther, lastOther).filter((path) => path.startsWith('/backlog')).length;
  // Its one slot kept busy would take about every other request (~40); starved, it gets none. A busy
  // machine lets outcomes and claims bunch, so the bound is a quarter of the fair share.
  assert.ok(backlogMeanwhile >= 10, `the backlog got ${backlogMeanwhile} requests while the 40 others were served`);
});

test('large payloads are not held while their attempts wait: each is loaded when its attempt starts', async (t) => {
  // A worker may hold several waves of its concurrency claimed; with 512 KB payloads that was half a
  // gigabyte. A claim leaves payloads over 16 KB out; such an attempt loads its input just before sending.
  const s = await setup(t, { HERALD_ENDPOINT_CONCURRENCY: '2' });
  let hold = Infinity;
  const receiver = await socketReceiver(t, () => hold);
  const endpoint = await s.endpoint(`${receiver.url}/hook`);
  const worker = s.service.worker!;
  const emitted = [];
  for (let i = 0; i < 6; i++) emitted.push(await s.emit({ i, pad: 'x'.repeat(20_000) }));
  // Two requests hang at the receiver, the four other attempts are claimed and wait for their slots.
  await eventually(
    async () => receiver.open === 2 && worker.busy === 6,
    20_000,
    'two attempts in flight and four waiting',
  );
  assert.equal(worker.waitingPayloadChars, 0, 'the waiting attempts hold no payload');

  hold = 0;
  receiver.release();
  await eventually(async () => receiver.requests.length >= 6, 20_000, 'every message delivered');
  for (const r of receiver.requests)
    assert.ok(
      verifies({ path: r.path, headers: r.headers, body: r.body, at: r.at }, endpoint.secret),
      'signed as usual',
    );
  const pads = receiver.requests.map((r) => (JSON.parse(r.body) as { data: { pad: string } }).data.pad.length);
  assert.deepEqual(pads, [20_000, 20_000, 20_000, 20_000, 20_000, 20_000], 'the payloads arrive whole');
  for (const { deliveryIds } of emitted)
    await s.until(deliveryIds[0]!, (d) => d.status === 'success', 'recorded as delivered');
});

test('small payloads are loaded with the claim', async (t) => {
  const s = await setup(t, { HERALD_ENDPOINT_CONCURRENCY: '2' });
  const receiver = await socketReceiver(t, () => Infinity);
  await s.endpoint(`${receiver.url}/hook`);
  const worker = s.service.worker!;
  for (let i = 0; i < 6; i++) await s.emit({ i });
  await eventually(
    async () => receiver.open === 2 && worker.busy === 6,
    20_000,
    'two attempts in flight and four waiting',
  );
  assert.equal(
    worker.waitingPayloadChars,
    4 * JSON.stringify({ i: 0 }).length,
    'the four waiting attempts hold their payloads',
  );
  await receiver.stop();
});
