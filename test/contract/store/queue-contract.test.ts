import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Kysely, sql } from 'kysely';
import { nextAttemptAt } from '../../../src/store/queue/book.js';
import type { AttemptInput, Queue } from '../../../src/store/queue.js';
import type { Database } from '../../../src/store/schema.js';
import { openStore, outcome } from '../../support/store.js';

// What every queue driver does, run against the driver of the store under test: claims under a lease,
// releasing and extending it, recording outcomes with their consequences (the next attempt, exhaustion,
// a manual attempt, health) and the events the planner reports. test/store/outcome-plans.test.ts checks
// random batches against the planner.

const A = 'wrk_contract_a';
const B = 'wrk_contract_b';

const tasksOf = (db: Kysely<Database>) => db.selectFrom('delivery_tasks').selectAll().orderBy('id').execute();
/** A delivery as reads show it: with its next attempt time, read from its tasks. */
const deliveryOf = (db: Kysely<Database>, id: string) =>
  db
    .selectFrom('deliveries')
    .selectAll()
    .select(nextAttemptAt(sql.ref('deliveries.id'), Date.now()).as('next_attempt_at'))
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

test('a claim leases due tasks to one owner: others see none until it releases them or its lease ends', {
  timeout: 60_000,
}, async (t) => {
  const { store, emit } = await openStore(t);
  await emit(2);
  const db = store.ctx.db;
  const before = Date.now();
  const claimed = await store.queue.claimLoaded(A, 10);
  assert.equal(claimed.length, 2);
  for (const { task, input } of claimed) {
    assert.ok(input, 'each task comes with its input');
    assert.equal(input.task, task);
    assert.ok(task.leaseUntil >= before + 60_000, 'leased for HERALD_LEASE');
  }
  assert.deepEqual(
    (await tasksOf(db)).map((row) => [row.lease_owner, row.run_at]),
    claimed.map(({ task }) => [A, task.leaseUntil]),
  );
  assert.deepEqual(await store.queue.claimLoaded(B, 10), [], 'leased tasks are not due');
  assert.equal(await store.queue.nextDueAt(), claimed[0]!.task.leaseUntil, 'due again when the lease ends');

  // Extending: only by the owner, and only while the lease is the one it wrote.
  const [first, second] = claimed.map(({ task }) => task);
  assert.equal(await store.queue.extendLease({ ...first! }, B), false);
  const leaseBefore = first!.leaseUntil;
  assert.equal(await store.queue.extendLease(first!, A), true);
  assert.ok(first!.leaseUntil >= leaseBefore);
  assert.equal(first!.run_at, first!.leaseUntil);
  assert.equal(await store.queue.extendLease({ ...first!, leaseUntil: leaseBefore - 1 }, A), false, 'an old lease');

  // Releasing: another owner's release changes nothing; the owner's makes them due at once.
  await store.queue.release([first!, second!], B);
  assert.deepEqual(await store.queue.claimLoaded(B, 10), []);
  await store.queue.release([first!, second!], A);
  const reclaimed = await store.queue.claimLoaded(B, 10);
  assert.deepEqual(
    reclaimed.map(({ task }) => task.id),
    [first!.id, second!.id],
  );
});

test('an outcome of a task another owner holds now is recorded and counted, but not "owned"', {
  timeout: 60_000,
}, async (t) => {
  const { store, emit, endpointId } = await openStore(t, { HERALD_RETRY_SCHEDULE: '0s,1h' });
  await emit(1);
  const db = store.ctx.db;
  const stale = await claimOne(store.queue, A);
  await store.queue.release([stale.task], A);
  const current = await claimOne(store.queue, B);

  assert.deepEqual(await store.queue.completeMany([{ input: stale, result: outcome(500) }], A), [false]);
  const [task] = await tasksOf(db);
  assert.deepEqual([task!.id, task!.lease_owner], [current.task.id, B], "the other owner's task stays");
  const delivery = await deliveryOf(db, stale.task.delivery_id);
  assert.deepEqual(
    [delivery.status, delivery.attempt_count, delivery.schedule_step],
    ['pending', 1, 0],
    'counted, but the schedule does not move',
  );
  assert.equal((await endpointOf(db, endpointId)).status, 'active', 'nor does the endpoint');

  assert.deepEqual(await store.queue.completeMany([{ input: current, result: outcome(200) }], B), [true]);
  const done = await deliveryOf(db, stale.task.delivery_id);
  assert.deepEqual([done.status, done.attempt_count, done.next_attempt_at], ['success', 2, null]);
  assert.deepEqual(await tasksOf(db), []);
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
  const [next] = await tasksOf(db);
  assert.deepEqual(
    [next!.delivery_id, next!.trigger, next!.attempt_number, next!.run_at, next!.lease_owner],
    [first.task.delivery_id, 'scheduled', 2, at, null],
  );
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
  assert.deepEqual(await tasksOf(db), [], 'no attempt left');
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
  assert.equal(await store.deliveries.retry((await openScope(store, deliveryId))!, deliveryId), 2);
  const manual = await claimOne(store.queue, A);
  assert.equal(manual.task.trigger, 'manual');
  await store.queue.completeMany([{ input: manual, result: outcome(500) }], A);
  const after = await deliveryOf(db, deliveryId);
  assert.deepEqual(
    [after.status, after.schedule_step, after.attempt_count, after.next_attempt_at],
    ['pending', 1, 2, scheduled.next_attempt_at],
  );
  const [waiting] = await tasksOf(db);
  assert.deepEqual([waiting!.trigger, waiting!.attempt_number], ['scheduled', 3], 'renumbered behind the manual one');
});

test('the same outcome recorded twice counts once', { timeout: 60_000 }, async (t) => {
  const { store, emit } = await openStore(t, { HERALD_RETRY_SCHEDULE: '0s,1h' });
  await emit(1);
  const db = store.ctx.db;
  const input = await claimOne(store.queue, A);
  const batch = [{ input, result: outcome(503) }];
  assert.deepEqual(await store.queue.completeMany(batch, A), [true]);
  assert.deepEqual(await store.queue.record(batch, A), { owned: [false], events: [] });
  assert.equal((await db.selectFrom('attempts').select('id').execute()).length, 1);
  const delivery = await deliveryOf(db, input.task.delivery_id);
  assert.deepEqual([delivery.attempt_count, delivery.schedule_step], [1, 1]);
  assert.equal((await tasksOf(db)).length, 1, 'one next attempt');
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
