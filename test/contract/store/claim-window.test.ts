import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { taskKey } from '../../../src/domain/outcome-plan.js';
import { openStore } from '../../support/store.js';

// The worker's reads of the due queue start from its window instead of the oldest task, so that they do
// not walk past every due task of the endpoints it leaves out (src/delivery/worker.ts, src/store/queue.ts).
// A general claim usually reads only the tasks due after the last claim that took all it could (less a
// margin), and every 5 s the whole due queue. After a claim that took everything due, the next due
// attempt is looked for from the time that claim started: what was due before then and is still queued
// belongs to another worker's claim or waits for its endpoint's top-up.

/** A store with two endpoints (`busy`, `other`) and `messages` messages, so one task of each per message. */
async function twoEndpoints(t: TestContext, messages: number) {
  const { store, scope, appId, endpointId: busy, emit } = await openStore(t);
  const other = (await store.endpoints.create(scope, { appId, url: 'http://127.0.0.1:9/other' })).row.id;
  await emit(messages);
  const db = store.ctx.db;
  // A task's key (its delivery and attempt number, as a claim names it) to its delivery.
  const deliveryOf = new Map<string, string>();
  const tasksOf = async (endpointId: string) =>
    (
      await db
        .selectFrom('deliveries')
        .select(['id', 'next_attempt'])
        .where('endpoint_id', '=', endpointId)
        .where('run_at', 'is not', null)
        .orderBy('id')
        .execute()
    ).map((row) => {
      const key = taskKey(row.id, Number(row.next_attempt));
      deliveryOf.set(key, row.id);
      return key;
    });
  const setRunAt = (key: string, runAt: number) =>
    db.updateTable('deliveries').set({ run_at: runAt }).where('id', '=', deliveryOf.get(key)!).execute();
  return { store, busy, other, tasksOf, setRunAt };
}

test('a claim with a window takes only the tasks due in it; without one, every due task', {
  timeout: 60_000,
}, async (t) => {
  const { store, busy, tasksOf, setRunAt, other } = await twoEndpoints(t, 4);
  const now = Date.now();
  // The busy endpoint: a backlog due long ago and one task in the window. The other: one task due before
  // the window (a late commit), one in it, one at its very start (outside: the window is open there), and
  // one not due yet.
  const busyTasks = await tasksOf(busy);
  for (const id of busyTasks.slice(0, 3)) await setRunAt(id, now - 60_000);
  await setRunAt(busyTasks[3]!, now - 500);
  const [late, inWindow, atStart, notYet] = await tasksOf(other);
  const windowFrom = now - 1_000;
  await setRunAt(late!, now - 5_000);
  await setRunAt(inWindow!, now - 200);
  await setRunAt(atStart!, windowFrom);
  await setRunAt(notYet!, now + 60_000);

  const ids = (claimed: { id: string }[]) => claimed.map((task) => task.id).sort();
  assert.deepEqual(
    ids(await store.queue.claim('wrk_a', 10, { skip: [busy], dueAfter: windowFrom })),
    [inWindow],
    'in the window, the busy endpoint left out',
  );
  assert.deepEqual(
    ids(await store.queue.claim('wrk_b', 10, { dueAfter: windowFrom })),
    [busyTasks[3]],
    "the busy endpoint's task in the window when it is not left out",
  );
  assert.deepEqual(
    ids(await store.queue.claim('wrk_c', 10, { skip: [busy] })),
    [late, atStart].sort(),
    'without a window, every due task left',
  );
  assert.deepEqual(
    (await store.queue.claimLoaded('wrk_d', 10, { dueAfter: windowFrom })).map(({ task }) => task.id),
    [],
    'claimLoaded keeps to the window too',
  );
  assert.deepEqual(
    ids(await store.queue.claimLoaded('wrk_d', 10).then((claimed) => claimed.map(({ task }) => task))),
    busyTasks.slice(0, 3).sort(),
  );
});

test('the next due attempt counts from the given time on and leaves out the given endpoints', {
  timeout: 60_000,
}, async (t) => {
  const { store, busy, tasksOf, setRunAt, other } = await twoEndpoints(t, 3);
  const now = Date.now();
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

  assert.equal(
    await store.queue.nextDueAt([busy], now),
    now + 5_000,
    'the busy endpoint and what was due before the claim left out',
  );
  assert.equal(
    await store.queue.nextDueAt([], now),
    now + 2_000,
    "the busy endpoint's retry counts when it is not left out",
  );
  assert.equal(await store.queue.nextDueAt([busy], now - 2_000), now - 1_000, 'a task due after the given time counts');
  assert.equal(await store.queue.nextDueAt([busy, other], now), null, 'nothing outside the endpoints left out');
  assert.equal(await store.queue.nextDueAt([busy]), now - 1_000, 'from the oldest task when no time is given');
});

test('a claim and the next-due read leave out any number of endpoints', { timeout: 60_000 }, async (t) => {
  const { store, busy, tasksOf, setRunAt, other } = await twoEndpoints(t, 2);
  const now = Date.now();
  const [busyTask] = await tasksOf(busy);
  const [otherDue, otherLater] = await tasksOf(other);
  await setRunAt(busyTask!, now - 60_000);
  await setRunAt(otherDue!, now - 1_000);
  await setRunAt(otherLater!, now + 5_000);
  // A worker with thousands of request slots leaves out as many endpoints: more than either database
  // takes as bound parameters (SQLite 32,766, PostgreSQL 65,535) if each were one.
  const manyBusy = [busy, ...Array.from({ length: 70_000 }, (_, i) => `ep_elsewhere${i}`)];
  assert.equal(await store.queue.nextDueAt(manyBusy, now - 2_000), now - 1_000);
  assert.deepEqual(
    (await store.queue.claimLoaded('wrk_a', 10, { skip: manyBusy })).map(({ task }) => task.id),
    [otherDue],
  );
  assert.deepEqual(
    (await store.queue.claim('wrk_b', 10, { skip: [...manyBusy, other] })).map((task) => task.id),
    [],
    'both endpoints left out',
  );
});
