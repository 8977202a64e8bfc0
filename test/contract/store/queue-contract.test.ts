import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Kysely, sql } from 'kysely';
import { EMPTY_QUEUE, pick, type QueueColumns, waitingOf } from '../../../src/domain/queue-slot.js';
import { QUEUE_COLUMNS } from '../../../src/store/queue/columns.js';
import { nextAttemptAt } from '../../../src/store/queue/book.js';
import type { AttemptInput, Queue } from '../../../src/store/queue/index.js';
import type { Database } from '../../../src/store/schema.js';
import { openStore, outcome } from '../../support/store.js';

// What every queue driver does, run against the driver of the store under test: claims under a lease,
// releasing and extending it, recording outcomes with their consequences (the next attempt, exhaustion,
// a manual attempt, health) and the events the planner reports. test/store/outcome-plans.test.ts checks
// random batches against the planner.

const A = 'wrk_contract_a';
const B = 'wrk_contract_b';

/** The queue columns of every delivery (src/domain/queue-slot.ts), by delivery id. */
const queuesOf = async (db: Kysely<Database>): Promise<Map<string, QueueColumns>> =>
  new Map(
    (
      await db
        .selectFrom('deliveries')
        .select(['id', ...QUEUE_COLUMNS])
        .orderBy('id')
        .execute()
    ).map((row) => [row.id, pick(row)]),
  );
/** One delivery's queue columns. */
const queueOf = async (db: Kysely<Database>, id: string): Promise<QueueColumns> => (await queuesOf(db)).get(id)!;
/** A delivery as reads show it: with its next attempt time, read from its queue. */
const deliveryOf = (db: Kysely<Database>, id: string) =>
  db
    .selectFrom('deliveries')
    .selectAll()
    .select(sql<number | null>`${nextAttemptAt(Date.now())}`.as('next_attempt_at'))
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
const endpointOf = (db: Kysely<Database>, id: string) =>
  db.selectFrom('endpoints').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

/** Claims exactly one task for `owner` and returns its input. */
async function claimOne(queue: Queue, owner: string): Promise<AttemptInput> {
  const claimed = await queue.claimLoaded(owner, 10);
  assert.equal(claimed.length, 1, 'one task claimed');
  return claimed[0]!.input!;
}

test('a claim leases due attempts to one owner: others see none until it releases them or its lease ends', {
  timeout: 60_000,
}, async (t) => {
  const { store, emit } = await openStore(t);
  await emit(2);
  const db = store.ctx.db;
  const queued = await queuesOf(db);
  const before = Date.now();
  const claimed = await store.queue.claimLoaded(A, 10);
  assert.equal(claimed.length, 2);
  for (const { task, input } of claimed) {
    assert.ok(input, 'each attempt comes with its input');
    assert.equal(input.task, task);
    assert.ok(task.leaseUntil >= before + 60_000, 'leased for HERALD_LEASE');
    assert.deepEqual([task.trigger, task.attempt_number], ['scheduled', 1]);
  }
  // A claim writes the lease and nothing else: the head keeps its due time.
  assert.deepEqual(
    [...(await queuesOf(db))],
    claimed.map(({ task }) => [
      task.delivery_id,
      { ...queued.get(task.delivery_id)!, lease_owner: A, lease_until: task.leaseUntil },
    ]),
  );
  assert.deepEqual(await store.queue.claimLoaded(B, 10), [], 'leased attempts are not due');
  // Held attempts set no wake-up: a dead worker's come back through the heartbeat (due now) or a claim
  // over the whole queue, and reading lease ends would read every queued row.
  assert.equal(await store.queue.nextDueAt(), null, 'held attempts are not due');

  // Extending: only by the owner, and only while the lease is the one it wrote.
  const [first, second] = claimed.map(({ task }) => task);
  assert.equal(await store.queue.extendLease({ ...first! }, B), false);
  const leaseBefore = first!.leaseUntil;
  await new Promise((resolve) => setTimeout(resolve, 2));
  assert.equal(await store.queue.extendLease(first!, A), true);
  assert.ok(first!.leaseUntil > leaseBefore);
  assert.equal((await queueOf(db, first!.delivery_id)).lease_until, first!.leaseUntil, 'the new lease end is written');
  assert.equal(await store.queue.extendLease({ ...first!, leaseUntil: leaseBefore }, A), false, 'an old lease');

  // Releasing: another owner's release changes nothing; the owner's makes them due at once.
  await store.queue.release([first!, second!], B);
  assert.deepEqual(await store.queue.claimLoaded(B, 10), []);
  const released = Date.now();
  await store.queue.release([first!, second!], A);
  for (const task of [first!, second!]) {
    const queue = await queueOf(db, task.delivery_id);
    assert.deepEqual([queue.lease_owner, queue.lease_until, queue.next_attempt], [null, null, 1]);
    assert.ok(queue.run_at! >= released && queue.run_at! <= Date.now(), 'due now');
  }
  const reclaimed = await store.queue.claimLoaded(B, 10);
  assert.deepEqual(
    reclaimed.map(({ task }) => task.id),
    [first!.id, second!.id],
    'the same attempts',
  );
  // Released as queued (a claim's excess over its endpoint's share): the lease goes, the due time stays.
  const dueBefore = await queuesOf(db);
  await store.queue.release(
    reclaimed.map(({ task }) => task),
    B,
    'as-queued',
  );
  assert.deepEqual(
    [...(await queuesOf(db))],
    [...dueBefore].map(([id, q]) => [id, { ...q, lease_owner: null, lease_until: null }]),
  );
  assert.equal((await store.queue.claimLoaded(A, 10)).length, 2, 'due again');
});

test('an outcome of an attempt another owner holds now is recorded and counted, but not "owned"', {
  timeout: 60_000,
}, async (t) => {
  const { store, emit, endpointId } = await openStore(t, { HERALD_RETRY_SCHEDULE: '0s,1h' });
  await emit(1);
  const db = store.ctx.db;
  const stale = await claimOne(store.queue, A);
  await store.queue.release([stale.task], A);
  const current = await claimOne(store.queue, B);
  assert.equal(current.task.id, stale.task.id, 'the same attempt, claimed again');

  assert.deepEqual(await store.queue.completeMany([{ input: stale, result: outcome(500) }], A), [false]);
  const queue = await queueOf(db, stale.task.delivery_id);
  assert.deepEqual(
    [queue.next_attempt, queue.lease_owner, queue.lease_until, queue.queued_after],
    [1, B, current.task.leaseUntil, null],
    "the other owner's attempt stays, under its lease",
  );
  const delivery = await deliveryOf(db, stale.task.delivery_id);
  assert.deepEqual(
    [delivery.status, delivery.attempt_count, delivery.schedule_step, delivery.attempt_seq],
    ['pending', 1, 0, 1],
    'counted, but the schedule does not move',
  );
  assert.equal((await endpointOf(db, endpointId)).status, 'active', 'nor does the endpoint');

  assert.deepEqual(await store.queue.completeMany([{ input: current, result: outcome(200) }], B), [true]);
  const done = await deliveryOf(db, stale.task.delivery_id);
  assert.deepEqual([done.status, done.attempt_count, done.next_attempt_at], ['success', 2, null]);
  assert.deepEqual(await queueOf(db, stale.task.delivery_id), EMPTY_QUEUE);
});

test("a failure queues the delivery's next scheduled attempt; the last one exhausts it", {
  timeout: 60_000,
}, async (t) => {
  const { store, emit, endpointId } = await openStore(t, { HERALD_RETRY_SCHEDULE: '0s,0s,0s' });
  await emit(1);
  const db = store.ctx.db;

  const first = await claimOne(store.queue, A);
  const at = Date.now();
  assert.deepEqual(await store.queue.completeMany([{ input: first, result: outcome(500, at) }], A), [true]);
  const next = await queueOf(db, first.task.delivery_id);
  assert.deepEqual(next, {
    run_at: at,
    next_trigger: 'scheduled',
    next_attempt: 2,
    lease_owner: null,
    lease_until: null,
    queued_after: null,
  });
  const pending = await deliveryOf(db, first.task.delivery_id);
  assert.deepEqual(
    [pending.status, pending.schedule_step, pending.attempt_seq, pending.attempt_count, pending.next_attempt_at],
    ['pending', 1, 2, 1, at],
  );
  assert.deepEqual(
    [(await endpointOf(db, endpointId)).status, (await endpointOf(db, endpointId)).failing_since],
    ['failing', at],
  );

  const second = await claimOne(store.queue, A);
  await store.queue.completeMany([{ input: second, result: outcome(500) }], A);
  const third = await claimOne(store.queue, A);
  assert.equal(third.task.attempt_number, 3);
  const lastAt = Date.now();
  const recorded = await store.queue.record([{ input: third, result: outcome(500, lastAt) }], A);
  assert.deepEqual(recorded.owned, [true]);
  const deliveryId = first.task.delivery_id;
  assert.deepEqual(recorded.events, [
    { type: 'delivery.failing', deliveryId, endpointId, at: lastAt },
    { type: 'delivery.exhausted', deliveryId, endpointId, at: lastAt },
  ]);
  assert.deepEqual(await queueOf(db, deliveryId), EMPTY_QUEUE, 'no attempt left');
  const failed = await deliveryOf(db, deliveryId);
  assert.deepEqual(
    [failed.status, failed.schedule_step, failed.attempt_count, failed.next_attempt_at],
    ['failed', 3, 3, null],
  );
  assert.equal((await endpointOf(db, endpointId)).exhausted_at, lastAt, 'the endpoint knows a delivery gave up');

  // A manual attempt of the failed delivery: it delivers, and the delivery has recovered.
  assert.equal(await store.deliveries.retry((await openScope(store, deliveryId))!, deliveryId), 4);
  const manual = await claimOne(store.queue, B);
  assert.deepEqual([manual.task.trigger, manual.task.attempt_number], ['manual', 4]);
  assert.deepEqual(await store.queue.completeMany([{ input: manual, result: outcome(200) }], B), [true]);
  const delivered = await deliveryOf(db, deliveryId);
  assert.deepEqual([delivered.status, delivered.attempt_count, delivered.next_attempt_at], ['success', 4, null]);
  const endpoint = await endpointOf(db, endpointId);
  assert.deepEqual([endpoint.status, endpoint.failing_since, endpoint.exhausted_at], ['active', null, null]);
});

test('a failed manual attempt leaves the running schedule alone', { timeout: 60_000 }, async (t) => {
  const { store, emit } = await openStore(t, { HERALD_RETRY_SCHEDULE: '0s,1h' });
  await emit(1);
  const db = store.ctx.db;
  const first = await claimOne(store.queue, A);
  await store.queue.completeMany([{ input: first, result: outcome(500) }], A);
  const deliveryId = first.task.delivery_id;
  const scheduled = await deliveryOf(db, deliveryId);
  // The retry takes the waiting scheduled attempt's place and number: it waits for nothing.
  assert.equal(await store.deliveries.retry((await openScope(store, deliveryId))!, deliveryId), 2);
  const manual = await claimOne(store.queue, A);
  assert.deepEqual([manual.task.trigger, manual.task.attempt_number], ['manual', 2]);
  await store.queue.completeMany([{ input: manual, result: outcome(500) }], A);
  const after = await deliveryOf(db, deliveryId);
  assert.deepEqual(
    [after.status, after.schedule_step, after.attempt_count, after.next_attempt_at],
    ['pending', 1, 2, scheduled.next_attempt_at],
  );
  const waiting = await queueOf(db, deliveryId);
  assert.deepEqual(
    [waiting.next_trigger, waiting.next_attempt, waiting.queued_after],
    ['scheduled', 3, null],
    'renumbered behind the manual one',
  );
});

test('a manual retry while the head is under way waits behind it, and goes before the retry its failure queues', {
  timeout: 60_000,
}, async (t) => {
  const { store, emit } = await openStore(t, { HERALD_RETRY_SCHEDULE: '0s,0s' });
  await emit(1);
  const db = store.ctx.db;
  const first = await claimOne(store.queue, A);
  const deliveryId = first.task.delivery_id;
  assert.equal(await store.deliveries.retry((await openScope(store, deliveryId))!, deliveryId), 2);
  assert.deepEqual(await store.queue.claimLoaded(B, 10), [], 'not sent beside the attempt under way');
  const held = await queueOf(db, deliveryId);
  assert.deepEqual([held.next_attempt, held.lease_owner], [1, A], 'the head is still the attempt under way');
  assert.deepEqual(waitingOf(held), [{ number: 2, trigger: 'manual', runAt: null }]);

  // Its failure queues the next scheduled attempt, due at once (0s): the manual one goes first all the same.
  const at = Date.now();
  await store.queue.completeMany([{ input: first, result: outcome(500, at) }], A);
  const manual = await claimOne(store.queue, B);
  assert.deepEqual([manual.task.trigger, manual.task.attempt_number], ['manual', 2]);
  assert.deepEqual(waitingOf(await queueOf(db, deliveryId)), [{ number: 3, trigger: 'scheduled', runAt: at }]);
  await store.queue.completeMany([{ input: manual, result: outcome(500) }], B);
  const scheduled = await claimOne(store.queue, B);
  assert.deepEqual([scheduled.task.trigger, scheduled.task.attempt_number], ['scheduled', 3]);
});

test('the same outcome recorded twice counts once', { timeout: 60_000 }, async (t) => {
  const { store, emit } = await openStore(t, { HERALD_RETRY_SCHEDULE: '0s,1h' });
  await emit(1);
  const db = store.ctx.db;
  const input = await claimOne(store.queue, A);
  const batch = [{ input, result: outcome(503) }];
  assert.deepEqual(await store.queue.completeMany(batch, A), [true]);
  assert.deepEqual(await store.queue.record(batch, A), { owned: [false], events: [] });
  assert.equal((await db.selectFrom('attempt_log').select('id').execute()).length, 1);
  const delivery = await deliveryOf(db, input.task.delivery_id);
  assert.deepEqual([delivery.attempt_count, delivery.schedule_step], [1, 1]);
  const queue = await queueOf(db, input.task.delivery_id);
  assert.deepEqual(
    [queue.next_attempt, queue.next_trigger, queue.queued_after],
    [2, 'scheduled', null],
    'one next attempt',
  );
});

/** The scope a delivery belongs to (for the API's calls). */
async function openScope(store: Awaited<ReturnType<typeof openStore>>['store'], deliveryId: string) {
  const row = await store.ctx.db
    .selectFrom('deliveries')
    .select(['org_id', 'livemode'])
    .where('id', '=', deliveryId)
    .executeTakeFirst();
  return row && { orgId: row.org_id, livemode: row.livemode === 1 };
}
