import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import type { WorkerQueue } from '../../src/store/queue.js';
import type { Store } from '../../src/store/index.js';
import { eventually, Receiver } from '../support/receiver.js';
import { openStore } from '../store/helpers.js';

// The claim loop sleeps up to its idle poll (500 ms) when it finds nothing; work queued while a claim is
// under way must still be claimed at once, a claim that took everything due is not repeated at once, and
// a claim that failed is tried again after its 1 s pause, not after a further idle poll. After a claim that
// took everything due, the next due attempt is looked for from the time that claim started.

test('work queued while a claim that finds nothing runs is claimed at once, not at the next idle poll', { timeout: 60_000 }, async (t) => {
  const receiver = await new Receiver().start();
  const { store, config, emit, closeFirst } = await openStore(t, {}, `${receiver.url}/hook`);
  closeFirst(() => receiver.stop());

  // The real queue, with an emit slipped in while the first empty claim is under way (before it answers).
  const calls: string[] = [];
  const nextDueAsked: { since: number | undefined; claimCalledAt: number }[] = [];
  let claimCalledAt = 0;
  let emittedAt = 0;
  const queue: WorkerQueue = {
    ...bind(store.queue),
    nextDueAt: (exclude, since) => {
      calls.push('nextDueAt');
      nextDueAsked.push({ since, claimCalledAt });
      return store.queue.nextDueAt(exclude, since);
    },
    claimLoaded: async (owner, limit, exclude, only) => {
      claimCalledAt = Date.now();
      const claimed = await store.queue.claimLoaded(owner, limit, exclude, only);
      calls.push(`claimed ${claimed.length}`);
      if (claimed.length === 0 && emittedAt === 0) {
        emittedAt = Date.now();
        await emit(1);
      }
      return claimed;
    },
  };
  const worker = new DeliveryWorker(store, config, pino({ level: 'silent' }), queue);
  closeFirst(() => worker.stop());
  worker.start();
  await receiver.waitFor(1, 5_000);
  // The wake that came during the empty claim is kept: the next call claims the new task, with no
  // nextDueAt and no idle poll (500 ms) in between.
  const empty = calls.indexOf('claimed 0');
  assert.deepEqual(calls.slice(empty, empty + 2), ['claimed 0', 'claimed 1'], calls.join(', '));
  assert.ok(receiver.received[0]!.at - emittedAt < 450, 'delivered before the idle poll would have run');

  // Three emits in one batch: the claim that takes them (fewer than it asked for) took all that was due,
  // so the loop goes on to find when the next attempt is due instead of claiming again.
  await Promise.all([emit(1), emit(1), emit(1)]);
  await receiver.waitFor(4, 5_000);
  const taken = calls.lastIndexOf('claimed 3');
  assert.ok(taken >= 0, `one claim took the three: ${calls.join(', ')}`);
  await eventually(async () => calls.length > taken + 1);
  assert.equal(calls[taken + 1], 'nextDueAt', `after the claim that took the three: ${calls.slice(taken).join(', ')}`);
  // Asked from the time the claim before it started, not from the oldest task (which walks a backlog), nor
  // from after the claim (which would skip what came due while it ran).
  for (const { since, claimCalledAt } of nextDueAsked) assert.ok(since !== undefined && since > claimCalledAt - 1_000 && since <= claimCalledAt, `nextDueAt since ${since}, claim called at ${claimCalledAt}`);
});

test('a claim that failed is tried again after its pause, with no idle poll on top', { timeout: 60_000 }, async (t) => {
  const { store, config, closeFirst } = await openStore(t);
  const claimsAt: number[] = [];
  const queue: WorkerQueue = {
    ...bind(store.queue),
    claimLoaded: async (...args) => {
      claimsAt.push(Date.now());
      if (claimsAt.length === 1) throw new Error('database away');
      return store.queue.claimLoaded(...args);
    },
  };
  const worker = new DeliveryWorker(store, config, pino({ level: 'silent' }), queue);
  closeFirst(() => worker.stop());
  worker.start();
  await eventually(async () => claimsAt.length >= 2, 5_000, 'a second claim');
  const pause = claimsAt[1]! - claimsAt[0]!;
  // 1 s after the failure; losing the new-work mark made it 1.5 s (the pause, then an idle poll).
  assert.ok(pause >= 950 && pause < 1_450, `second claim ${pause} ms after the failed one`);
});

/** The queue's methods bound to it, to override one. */
function bind(queue: Store['queue']): WorkerQueue {
  return {
    claimLoaded: queue.claimLoaded.bind(queue),
    release: queue.release.bind(queue),
    nextDueAt: queue.nextDueAt.bind(queue),
    extendLease: queue.extendLease.bind(queue),
    load: queue.load.bind(queue),
    drop: queue.drop.bind(queue),
    completeMany: queue.completeMany.bind(queue),
  };
}
