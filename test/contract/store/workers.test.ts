import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../support/store.js';

// Worker heartbeats in the store (src/store/workers.ts): the attempts of a worker that stopped beating are
// handed back; those of one that beats are not. When a worker reaps is test/unit/delivery/heartbeat.test.ts.

const DEAD_AFTER = 5_000;

test('the claimed attempts of a worker whose beat is stale are handed back, and only those', async (t) => {
  const { store, emit } = await openStore(t);
  await emit(4);
  await store.workers.beat('wrk_dead');
  await store.workers.beat('wrk_live');
  const dead = await store.queue.claim('wrk_dead', 2);
  const live = await store.queue.claim('wrk_live', 2);
  assert.equal(dead.length + live.length, 4);
  assert.equal(await store.workers.reapDead(DEAD_AFTER), 0, 'both beat just now');

  await store.ctx.db
    .updateTable('workers')
    .set({ beat_at: Date.now() - DEAD_AFTER - 1 })
    .where('id', '=', 'wrk_dead')
    .execute();
  assert.equal(await store.workers.reapDead(DEAD_AFTER), 2);
  const queues = await store.ctx.db.selectFrom('deliveries').selectAll().orderBy('id').execute();
  assert.equal(queues.length, 4);
  const now = Date.now();
  for (const queue of queues) {
    if (dead.some((d) => d.delivery_id === queue.id)) {
      assert.equal(queue.lease_owner, null, 'handed back');
      assert.equal(queue.lease_until, null, 'handed back');
      assert.ok(queue.run_at !== null && Number(queue.run_at) <= now, 'due again at once');
    } else {
      assert.ok(
        live.some((l) => l.delivery_id === queue.id),
        'claimed by one of the two',
      );
      assert.equal(queue.lease_owner, 'wrk_live', "the live worker's claim stands");
      assert.ok(Number(queue.lease_until) > now);
    }
  }
  const rows = await store.ctx.db.selectFrom('workers').select('id').execute();
  assert.deepEqual(
    rows.map((r) => r.id),
    ['wrk_live'],
    'the dead worker is forgotten',
  );
  // Handed back, they can be claimed by another worker.
  assert.equal((await store.queue.claim('wrk_live', 10)).length, 2);
  assert.equal(await store.workers.reapDead(DEAD_AFTER), 0);

  await store.workers.forget('wrk_live');
  assert.equal((await store.ctx.db.selectFrom('workers').select('id').execute()).length, 0);
});

test('a worker that beats again keeps its row and its start time', async (t) => {
  const { store } = await openStore(t);
  await store.workers.beat('wrk_a');
  const [first] = await store.ctx.db.selectFrom('workers').selectAll().execute();
  await new Promise((resolve) => setTimeout(resolve, 5));
  await store.workers.beat('wrk_a');
  const [second] = await store.ctx.db.selectFrom('workers').selectAll().execute();
  assert.equal(Number(second!.started_at), Number(first!.started_at));
  assert.ok(Number(second!.beat_at) > Number(first!.beat_at));
});
