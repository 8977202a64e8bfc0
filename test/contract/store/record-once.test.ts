import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EMPTY_QUEUE, pick } from '../../../src/domain/queue-slot.js';
import { openStore, outcome } from '../../support/store.js';

// An outcome can be recorded twice: its first commit went through but the answer never came back (the
// queue thread ended in between, or the connection to PostgreSQL was lost after COMMIT), so the worker
// writes it again. The second write must change nothing: one attempt in the history, counted once, and
// one next attempt for a failure.

const OWNER = 'wrk_record_once';

test('outcomes recorded a second time add no attempt and change nothing', { timeout: 60_000 }, async (t) => {
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
  const db = store.ctx.db;
  const rows = async () => ({
    deliveries: await db.selectFrom('deliveries').selectAll().orderBy('id').execute(),
    endpoints: await db.selectFrom('endpoints').selectAll().orderBy('id').execute(),
  });
  const once = await rows();
  // Later than the first write, so that anything written again would show in updated_at.
  await new Promise((resolve) => setTimeout(resolve, 5));
  for (const batch of batches)
    assert.deepEqual(
      await store.queue.completeMany(batch, OWNER),
      batch.map(() => false),
      'the leases are gone after the first write',
    );
  assert.deepEqual(await rows(), once, 'the second write changed no delivery and no endpoint');

  const attempts = await db.selectFrom('attempt_log').select(['delivery_id', 'status']).execute();
  assert.equal(attempts.length, 3, 'one attempt per outcome in the history');
  const deliveries = once.deliveries;
  assert.deepEqual(
    deliveries.map((d) => d.attempt_count),
    [1, 1, 1],
    'each delivery counts its attempt once',
  );
  const failed = deliveries.find((d) => d.id === third!.task.delivery_id)!;
  assert.equal(failed.status, 'pending');
  const next = pick(failed);
  assert.deepEqual(
    [next.next_trigger, next.next_attempt, next.lease_owner, next.queued_after],
    ['scheduled', 2, null, null],
    'one next attempt for the failure',
  );
  const delivered = deliveries.filter((d) => d.id !== failed.id);
  assert.deepEqual(
    delivered.map((d) => d.status),
    ['success', 'success'],
  );
  assert.deepEqual(
    delivered.map((d) => pick(d)),
    [EMPTY_QUEUE, EMPTY_QUEUE],
    'none for the successes',
  );
});

test('two workers that made the same attempt in the same millisecond both keep their row', {
  timeout: 60_000,
}, async (t) => {
  // The first worker's lease ran out while it was sending, the second claimed the attempt and sent it too:
  // two requests were made, so the history has two attempts, even when both finished in one millisecond.
  const { store, emit } = await openStore(t, { HERALD_RETRY_SCHEDULE: '0s,1h' });
  await emit(1);
  const [stale] = await store.queue.claimLoaded('wrk_first', 10);
  await store.ctx.db
    .updateTable('deliveries')
    .set({ lease_until: Date.now() - 1_000 })
    .execute();
  const [current] = await store.queue.claimLoaded('wrk_second', 10);
  assert.equal(current!.task.id, stale!.task.id, 'the second worker claimed the same attempt');
  const at = Date.now();
  assert.deepEqual(await store.queue.completeMany([{ input: stale!.input!, result: outcome(500, at) }], 'wrk_first'), [
    false,
  ]);
  assert.deepEqual(
    await store.queue.completeMany([{ input: current!.input!, result: outcome(200, at) }], 'wrk_second'),
    [true],
  );

  const db = store.ctx.db;
  const attempts = await db.selectFrom('attempt_log').select(['status', 'attempt_number']).orderBy('status').execute();
  assert.deepEqual(attempts, [
    { status: 'failed', attempt_number: 1 },
    { status: 'success', attempt_number: 1 },
  ]);
  const [delivery] = await db.selectFrom('deliveries').selectAll().execute();
  assert.deepEqual([delivery!.status, delivery!.attempt_count], ['success', 2]);
  assert.deepEqual(pick(delivery!), EMPTY_QUEUE, 'nothing left to send');
});
