import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { openStore } from './helpers.js';
import { Heartbeat } from '../../src/delivery/heartbeat.js';
import type { WorkerRegistry } from '../../src/store/workers.js';

// Worker heartbeats (src/store/workers.ts, src/delivery/heartbeat.ts): the attempts of a worker that stopped
// beating are handed back; those of one that beats are not; a worker reaps only after beating without a gap.

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
  const tasks = await store.ctx.db.selectFrom('delivery_tasks').selectAll().orderBy('id').execute();
  const now = Date.now();
  for (const task of tasks) {
    if (dead.some((d) => d.id === task.id)) {
      assert.equal(task.lease_owner, null, 'handed back');
      assert.ok(Number(task.run_at) <= now, 'due again at once');
    } else {
      assert.equal(task.lease_owner, 'wrk_live', "the live worker's claim stands");
      assert.ok(Number(task.run_at) > now);
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

/** A registry that records calls; `failing` makes beats throw. */
function recordingRegistry() {
  const calls: string[] = [];
  const registry = {
    failing: false as boolean,
    calls,
    async beat() {
      calls.push('beat');
      if (registry.failing) throw new Error('database away');
    },
    async reapDead() {
      calls.push('reap');
      return 0;
    },
    async forget() {
      calls.push('forget');
    },
    async raiseStoredEvents() {
      calls.push('raise');
      return 0;
    },
  } satisfies WorkerRegistry & { failing: boolean; calls: string[] };
  return registry;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('a heartbeat reaps only after beating without a gap for the dead-worker bound, and forgets its row on stop', async () => {
  const registry = recordingRegistry();
  const heartbeat = new Heartbeat(registry, 'wrk_x', pino({ level: 'silent' }), () => {}, {
    intervalMs: 20,
    deadAfterMs: 200,
  });
  await heartbeat.start();
  assert.deepEqual(
    registry.calls,
    ['beat', 'raise'],
    'the first beat, and its raise of stored events, are done before start() returns',
  );
  await sleep(120);
  assert.ok(!registry.calls.includes('reap'), 'not before it has beaten for the bound');
  await sleep(250);
  assert.ok(registry.calls.includes('reap'), 'reaps once it has');

  // After failed beats (the database was away) it waits the whole bound again before reaping.
  registry.failing = true;
  await sleep(80);
  registry.failing = false;
  registry.calls.length = 0;
  await sleep(120);
  assert.ok(registry.calls.includes('beat'));
  assert.ok(!registry.calls.includes('reap'), 'no reaping right after a gap');
  assert.ok(registry.calls.includes('raise'), 'stored events are raised at every beat, after a gap too');
  await sleep(250);
  assert.ok(registry.calls.includes('reap'));

  await heartbeat.stop();
  const stoppedAt = registry.calls.length;
  assert.equal(registry.calls.at(-1), 'forget');
  await sleep(80);
  assert.equal(registry.calls.length, stoppedAt, 'no beat after stop');
});
