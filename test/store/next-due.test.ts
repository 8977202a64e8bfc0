import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from './helpers.js';

// After a claim that took every due task it could, the worker asks when the next attempt outside its busy
// endpoints comes due, from the time the claim started on: what was due before then and is still queued
// belongs to another worker's claim or waits for its endpoint's top-up (src/store/queue.ts, nextDueAt).

test('the next due attempt counts from the given time on and leaves out the given endpoints', { timeout: 60_000 }, async (t) => {
  const { store, scope, appId, endpointId: busy, emit } = await openStore(t);
  const other = (await store.endpoints.create(scope, { appId, url: 'http://127.0.0.1:9/other' })).row.id;
  await emit(3); // a task for each endpoint per message
  const db = store.ctx.db;
  const now = Date.now();
  const tasksOf = async (endpointId: string) => (await db.selectFrom('delivery_tasks').select('id').where('endpoint_id', '=', endpointId).orderBy('id').execute()).map((row) => row.id);
  const setRunAt = (id: string, runAt: number) => db.updateTable('delivery_tasks').set({ run_at: runAt }).where('id', '=', id).execute();
  // The busy endpoint: a backlog due long ago and a retry in 2 s. The other: one task due a second ago
  // (left by a claim), one in 5 s, one in 9 s.
  const busyTasks = await tasksOf(busy);
  await setRunAt(busyTasks[0]!, now - 60_000);
  await setRunAt(busyTasks[1]!, now - 50_000);
  await setRunAt(busyTasks[2]!, now + 2_000);
  const [left, soon, later] = await tasksOf(other);
  await setRunAt(left!, now - 1_000);
  await setRunAt(soon!, now + 5_000);
  await setRunAt(later!, now + 9_000);

  assert.equal(await store.queue.nextDueAt([busy], now), now + 5_000, 'the busy endpoint and what was due before the claim left out');
  assert.equal(await store.queue.nextDueAt([], now), now + 2_000, "the busy endpoint's retry counts when it is not left out");
  assert.equal(await store.queue.nextDueAt([busy], now - 2_000), now - 1_000, 'a task due after the given time counts');
  assert.equal(await store.queue.nextDueAt([busy, other], now), null, 'nothing outside the endpoints left out');
  assert.equal(await store.queue.nextDueAt([busy]), now - 1_000, 'from the oldest task when no time is given');
});
