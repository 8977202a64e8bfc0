import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore, outcome } from '../../support/store.js';

// An outcome can be recorded twice: its first commit went through but the answer never came back (the
// queue thread ended in between, or the connection to PostgreSQL was lost after COMMIT), so the worker
// writes it again. The second write must change nothing: one attempt in the history, counted once, and
// one next attempt for a failure.

const OWNER = 'wrk_record_once';

test('outcomes recorded a second time add no attempt and count nothing twice', { timeout: 60_000 }, async (t) => {
  const { store, emit } = await openStore(t, { HERALD_RETRY_SCHEDULE: '0s,1h' });
  await emit(3);

  const claimed = await store.queue.claimLoaded(OWNER, 10);
  assert.equal(claimed.length, 3);
  const [first, second, third] = claimed.map(({ input }) => input!);
  // Only 2xx outcomes (on PostgreSQL one statement), then a 2xx and a failure (the general path).
  const batches = [
    [{ input: first!, result: outcome(200) }],
    [
      { input: second!, result: outcome(200) },
      { input: third!, result: outcome(500) },
    ],
  ];
  for (const batch of batches)
    assert.deepEqual(
      await store.queue.completeMany(batch, OWNER),
      batch.map(() => true),
    );
  for (const batch of batches)
    assert.deepEqual(
      await store.queue.completeMany(batch, OWNER),
      batch.map(() => false),
      'the tasks are gone after the first write',
    );

  const db = store.ctx.db;
  const attempts = await db.selectFrom('attempts').select(['delivery_id', 'status']).execute();
  assert.equal(attempts.length, 3, 'one attempt per outcome in the history');
  const deliveries = await db
    .selectFrom('deliveries')
    .select(['id', 'status', 'attempt_count'])
    .orderBy('id')
    .execute();
  assert.deepEqual(
    deliveries.map((d) => d.attempt_count),
    [1, 1, 1],
    'each delivery counts its attempt once',
  );
  const failed = deliveries.find((d) => d.id === third!.task.delivery_id)!;
  assert.equal(failed.status, 'pending');
  const next = await db.selectFrom('delivery_tasks').select(['delivery_id', 'attempt_number']).execute();
  assert.deepEqual(
    next,
    [{ delivery_id: failed.id, attempt_number: 2 }],
    'one next attempt for the failure, none for the successes',
  );
  assert.deepEqual(
    deliveries.filter((d) => d.id !== failed.id).map((d) => d.status),
    ['success', 'success'],
  );
});

test('two workers that made the same attempt in the same millisecond both keep their row', {
  timeout: 60_000,
}, async (t) => {
  // The first worker's lease ran out while it was sending, the second claimed the task and sent it too:
  // two requests were made, so the history has two attempts, even when both finished in one millisecond.
  const { store, emit } = await openStore(t, { HERALD_RETRY_SCHEDULE: '0s,1h' });
  await emit(1);
  const [stale] = await store.queue.claimLoaded('wrk_first', 10);
  await store.ctx.db
    .updateTable('delivery_tasks')
    .set({ run_at: Date.now() - 1_000 })
    .execute();
  const [current] = await store.queue.claimLoaded('wrk_second', 10);
  assert.equal(current!.task.id, stale!.task.id, 'the second worker claimed the same task');
  const at = Date.now();
  assert.deepEqual(await store.queue.completeMany([{ input: stale!.input!, result: outcome(500, at) }], 'wrk_first'), [
    false,
  ]);
  assert.deepEqual(
    await store.queue.completeMany([{ input: current!.input!, result: outcome(200, at) }], 'wrk_second'),
    [true],
  );

  const db = store.ctx.db;
  const attempts = await db.selectFrom('attempts').select('status').orderBy('status').execute();
  assert.deepEqual(
    attempts.map((a) => a.status),
    ['failed', 'success'],
  );
  const [delivery] = await db.selectFrom('deliveries').select(['status', 'attempt_count']).execute();
  assert.deepEqual(delivery, { status: 'success', attempt_count: 2 });
  assert.equal((await db.selectFrom('delivery_tasks').select('id').execute()).length, 0, 'nothing left to send');
});
