import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { assertClaimTransition, ClaimLoop, type ClaimMode, type ClaimHost } from '../../../src/delivery/claim-loop.js';
import { Lanes } from '../../../src/delivery/lanes.js';
import type { ClaimedTask, WorkerQueue } from '../../../src/store/queue/index.js';
import { task } from '../../support/tasks.js';
import { eventually } from '../../support/receiver.js';

// The claim loop's modes on their own, with a queue and a worker made up here: every step starts from and
// goes back to `ready`, a failed claim backs off, and a transition outside the table throws.

const MODES: ClaimMode[] = ['stopped', 'ready', 'claiming', 'topping-up', 'sleeping', 'backing-off'];
const ALLOWED: [ClaimMode, ClaimMode][] = [
  ['stopped', 'ready'],
  ['ready', 'claiming'],
  ['ready', 'topping-up'],
  ['ready', 'sleeping'],
  ['ready', 'stopped'],
  ['claiming', 'ready'],
  ['claiming', 'backing-off'],
  ['topping-up', 'ready'],
  ['topping-up', 'backing-off'],
  ['sleeping', 'ready'],
  ['backing-off', 'ready'],
];

test('the claim loop moves only along the allowed transitions', () => {
  for (const from of MODES)
    for (const to of MODES) {
      const legal = ALLOWED.some(([f, t]) => f === from && t === to);
      if (legal) assert.doesNotThrow(() => assertClaimTransition(from, to), `${from} -> ${to}`);
      else assert.throws(() => assertClaimTransition(from, to), /illegal transition/, `${from} -> ${to}`);
    }
});

interface Call {
  kind: 'general' | 'top-up' | 'nextDueAt';
  mode: ClaimMode;
  only?: string;
  limit?: number;
}

/** A queue that answers claims from `due` (per endpoint) and records each call with the loop's mode. */
function fakeQueue(due: Map<string, number>, calls: Call[], loop: () => ClaimLoop, fail: () => boolean): WorkerQueue {
  const queue: Partial<WorkerQueue> = {
    claimLoaded: async (_owner, limit, scope = {}) => {
      calls.push({ kind: scope.only ? 'top-up' : 'general', mode: loop().mode, only: scope.only, limit });
      if (fail()) throw Object.assign(new Error('database away'), { code: 'ECONNREFUSED' });
      const tasks: { task: ClaimedTask; input: null }[] = [];
      for (const [endpointId, count] of due) {
        if (scope.only !== undefined && scope.only !== endpointId) continue;
        if (scope.skip?.includes(endpointId)) continue;
        const take = Math.min(count, limit - tasks.length);
        for (let i = 0; i < take; i++) tasks.push({ task: task(endpointId), input: null });
        due.set(endpointId, count - take);
      }
      return tasks;
    },
    nextDueAt: async () => {
      calls.push({ kind: 'nextDueAt', mode: loop().mode });
      return null;
    },
  };
  return queue as WorkerQueue;
}

test('a claim runs in `claiming`, a top-up in `topping-up`, and with nothing to do the loop sleeps', async (t) => {
  const lanes = new Lanes(2, 2);
  const calls: Call[] = [];
  const due = new Map([['ep_1', 10]]);
  let held = 0;
  const host: ClaimHost = {
    room: () => 8 - held,
    accept: async (claimed) => {
      for (const { task } of claimed) {
        if (lanes.hasRoom(task.endpoint_id)) {
          held++;
          lanes.enqueue(task);
        } else due.set(task.endpoint_id, due.get(task.endpoint_id)! + 1);
      }
      for (const { task } of claimed) lanes.reachedShare(task.endpoint_id);
    },
  };
  const loop: ClaimLoop = new ClaimLoop(
    fakeQueue(
      due,
      calls,
      () => loop,
      () => false,
    ),
    'wrk_test',
    lanes,
    host,
    pino({ level: 'silent' }),
  );
  t.after(() => loop.stop());
  assert.equal(loop.mode, 'stopped');
  loop.start();
  assert.equal(loop.mode, 'ready', 'started: the first pass is under way');
  await eventually(async () => loop.mode === 'sleeping', 2_000, 'asleep after a claim that took all it could');
  assert.deepEqual(
    calls.map(({ kind, mode }) => `${kind} in ${mode}`),
    // The first claim comes back full (its share kept, the rest given back), so the next one follows at once,
    // skipping the endpoint now left to top-ups; that one comes back short.
    ['general in claiming', 'general in claiming', 'nextDueAt in claiming'],
  );
  const lane = lanes.get('ep_1')!;
  assert.equal(lane.load, 4, 'its share kept, the rest given back');
  assert.equal(lane.topUp, 'maybe-more');

  // The lane drains to one wave: a top-up, woken at once, claims for it alone.
  lane.waiting.length = 2;
  held = 2;
  assert.ok(lanes.drained(lane));
  loop.wake();
  await eventually(async () => calls.some(({ kind }) => kind === 'top-up'), 2_000, 'a top-up');
  assert.deepEqual(
    calls.find(({ kind }) => kind === 'top-up'),
    {
      kind: 'top-up',
      mode: 'topping-up',
      only: 'ep_1',
      limit: 2,
    },
  );
  await eventually(async () => loop.mode === 'sleeping', 2_000, 'asleep again');
  assert.equal(lane.load, 4);
  assert.equal(lane.topUp, 'maybe-more', 'the top-up came back full');

  await loop.stop();
  assert.equal(loop.mode, 'stopped');
});

test('a claim that fails backs off, then the loop claims again; stop ends the back-off', async (t) => {
  const lanes = new Lanes(2, 2);
  const calls: Call[] = [];
  let failing = true;
  const host: ClaimHost = { room: () => 8, accept: async () => {} };
  const loop: ClaimLoop = new ClaimLoop(
    fakeQueue(
      new Map(),
      calls,
      () => loop,
      () => failing,
    ),
    'wrk_test',
    lanes,
    host,
    pino({ level: 'silent' }),
  );
  t.after(() => loop.stop());
  loop.start();
  await eventually(async () => loop.mode === 'backing-off', 2_000, 'backing off');
  failing = false;
  await eventually(async () => calls.length >= 2 && loop.mode === 'sleeping', 3_000, 'claimed again after the pause');
  assert.equal(calls[1]!.kind, 'general');

  failing = true;
  loop.newWork();
  await eventually(async () => loop.mode === 'backing-off', 2_000, 'backing off again');
  const stopping = Date.now();
  await loop.stop();
  assert.equal(loop.mode, 'stopped');
  assert.ok(Date.now() - stopping < 500, 'the back-off ends at once');
  // Started again, it claims at once.
  failing = false;
  const before = calls.length;
  loop.start();
  await eventually(async () => calls.length > before, 1_000, 'a claim after the restart');
  await loop.stop();
});
