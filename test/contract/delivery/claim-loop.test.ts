import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { DeliveryWorker, wavesHeld } from '../../../src/delivery/worker.js';
import type { WorkerQueue } from '../../../src/store/queue/index.js';
import type { Store } from '../../../src/store/index.js';
import { eventually, Receiver } from '../../support/receiver.js';
import { openStore } from '../../support/store.js';
import { SocketReceiver } from '../../support/delivery.js';

// The claim loop sleeps up to its idle poll (500 ms) when it finds nothing; work queued while a claim is
// under way must still be claimed at once, a claim that took everything due is not repeated at once, and
// a claim that failed is tried again after its 1 s pause, not after a further idle poll. After a claim that
// took everything due, the next due attempt is looked for from the time that claim started. General claims
// read only a window (what came due since the last claim that took all it could) except every 5 s.

test('work queued while a claim that finds nothing runs is claimed at once, not at the next idle poll', {
  timeout: 60_000,
}, async (t) => {
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
    claimLoaded: async (...args) => {
      claimCalledAt = Date.now();
      const claimed = await store.queue.claimLoaded(...args);
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
  for (const { since, claimCalledAt } of nextDueAsked)
    assert.ok(
      since !== undefined && since > claimCalledAt - 1_000 && since <= claimCalledAt,
      `nextDueAt since ${since}, claim called at ${claimCalledAt}`,
    );
});

test('a claim that failed is tried again after its pause, with no idle poll on top', { timeout: 60_000 }, async (t) => {
  const { store, config, closeFirst } = await openStore(t);
  const claimsAt: number[] = [];
  const queue: WorkerQueue = {
    ...bind(store.queue),
    claimLoaded: async (...args) => {
      claimsAt.push(Date.now());
      if (claimsAt.length === 1) throw Object.assign(new Error('database away'), { code: 'ECONNREFUSED' });
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

test('general claims read their window, and every 5 s the whole queue, which takes what was stamped due before the window', {
  timeout: 60_000,
}, async (t) => {
  const receiver = await new Receiver().start();
  // Every first attempt held back for an hour: the worker finds nothing due and polls.
  const { store, config, emit, closeFirst } = await openStore(
    t,
    { HERALD_RETRY_SCHEDULE: '1h' },
    `${receiver.url}/hook`,
  );
  closeFirst(() => receiver.stop());
  const generals: { at: number; dueAfter: number; taken: number; limit: number }[] = [];
  const queue: WorkerQueue = {
    ...bind(store.queue),
    claimLoaded: async (owner, limit, scope = {}) => {
      const at = Date.now();
      const claimed = await store.queue.claimLoaded(owner, limit, scope);
      if (scope.only === undefined) generals.push({ at, dueAfter: scope.dueAfter ?? 0, taken: claimed.length, limit });
      return claimed;
    },
  };
  await emit(1);
  const worker = new DeliveryWorker(store, config, pino({ level: 'silent' }), queue);
  closeFirst(() => worker.stop());
  worker.start();
  await eventually(async () => generals.length >= 3, 5_000, 'three general claims');
  // Stamped due 5 s ago, with no wake: what a commit later than the window's margin leaves behind it.
  await store.ctx.db
    .updateTable('deliveries')
    .set({ run_at: Date.now() - 5_000 })
    .where('run_at', 'is not', null)
    .execute();
  await receiver.waitFor(1, 10_000);
  const taking = generals.find((claim) => claim.taken > 0)!;
  assert.equal(taking.dueAfter, 0, 'taken by a claim over the whole queue');

  // Each claim reads from the start of the last claim that took all it could, less the 1 s margin (the
  // worker reads its clock just before the call: a little earlier than here), or the whole queue at most
  // every 5 s.
  let lastShort: number | null = null;
  let lastWhole = -Infinity;
  for (const claim of generals) {
    if (claim.dueAfter === 0) {
      assert.ok(claim.at - lastWhole >= 4_990, `whole-queue claims ${claim.at - lastWhole} ms apart`);
      lastWhole = claim.at;
    } else {
      assert.ok(
        lastShort !== null && claim.dueAfter >= lastShort - 1_050 && claim.dueAfter <= lastShort - 1_000,
        `window from ${claim.dueAfter}, last short claim at ${lastShort}`,
      );
    }
    if (claim.taken < claim.limit) lastShort = claim.at;
  }
  assert.ok(
    generals.some((claim) => claim.dueAfter > 0),
    `claims between them read only their window: ${JSON.stringify(generals)}`,
  );
});

/**
 * Two slots and as many claimed attempts as waves for each (wavesHeld), one slot per endpoint: a quick
 * endpoint and a hung one hold a share each, so the worker is full. The quick endpoint's attempts end while
 * their outcomes are still being recorded (each held 300 ms here), so its top-up is asked for while the
 * worker has no room, and the endpoint has drained when it runs. Its other tasks are then put behind the general claim's
 * window, so only that top-up (or the claim over the whole queue, 5 s after the worker's first) takes them.
 */
async function drainedWhileFull(t: TestContext, options: { failFirstTopUp: boolean }) {
  const quick = await new SocketReceiver().start();
  const hung = await new SocketReceiver().start();
  hung.holdMs = () => Infinity;
  const { store, config, scope, appId, endpointId, emit, closeFirst } = await openStore(
    t,
    { HERALD_CONCURRENCY: '2', HERALD_ENDPOINT_CONCURRENCY: '1', HERALD_RETRY_SCHEDULE: '1h' },
    `${quick.url}/quick`,
  );
  closeFirst(() => quick.stop());
  const hungEndpoint = (await store.endpoints.create(scope, { appId, url: `${hung.url}/hung` })).row.id;
  const emitted = 6;
  await emit(emitted);
  const seen = { firstRecordedAt: 0, topUpFailedAt: 0, generalClaims: 0 };
  const queue: WorkerQueue = {
    ...bind(store.queue),
    claimLoaded: async (...args) => {
      if (args[2]?.only === undefined) seen.generalClaims++;
      if (args[2]?.only === endpointId && options.failFirstTopUp && !seen.topUpFailedAt) {
        seen.topUpFailedAt = Date.now();
        throw Object.assign(new Error('database unavailable'), { code: '57P03' });
      }
      return store.queue.claimLoaded(...args);
    },
    completeMany: async (...args) => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      const owned = await store.queue.completeMany(...args);
      seen.firstRecordedAt ||= Date.now();
      return owned;
    },
  };
  const worker = new DeliveryWorker(store, config, pino({ level: 'silent' }), queue);
  closeFirst(() => worker.stop());
  closeFirst(() => hung.stop()); // first: the worker's stop waits for the hung attempt
  worker.start();
  // The worker's first claim (over the whole queue) finds nothing due; then both endpoints' tasks come due
  // within the window, at once, taking turns (hung, quick, hung, ...): a claim of the worker's whole room
  // takes a share of each, and the worker is full. (One endpoint's first, the claim would take its tasks
  // past its share and the other's lane would start below its share.)
  await eventually(async () => seen.generalClaims >= 1, 5_000, 'a first general claim');
  const db = store.ctx.db;
  const now = Date.now();
  await db.transaction().execute(async (trx) => {
    for (const [offset, endpoint] of [
      [0, hungEndpoint],
      [1, endpointId],
    ] as const) {
      const queued = await trx
        .selectFrom('deliveries')
        .select('id')
        .where('endpoint_id', '=', endpoint)
        .where('run_at', 'is not', null)
        .orderBy('id')
        .execute();
      for (const [i, { id }] of queued.entries())
        await trx
          .updateTable('deliveries')
          .set({ run_at: now - 600 + 2 * i + offset })
          .where('id', '=', id)
          .execute();
    }
  });
  await eventually(async () => quick.requests.length >= 1, 5_000, "the quick endpoint's first attempt");
  await db
    .updateTable('deliveries')
    .set({ run_at: Date.now() - 60_000 })
    .where('endpoint_id', '=', endpointId)
    .where('run_at', 'is not', null)
    .where('lease_owner', 'is', null)
    .execute();
  // The quick endpoint's first claim took one share; the attempt after it needs the top-up.
  const share = wavesHeld(config);
  assert.ok(emitted > share, 'more messages than one share');
  await eventually(async () => quick.requests.length > share, 10_000, "the quick endpoint's first topped-up attempt");
  assert.equal(hung.requests.length, 1, 'the hung endpoint holds its one slot');
  return { toppedUpAt: quick.requests[share]!.at, ...seen };
}

test('an endpoint that drains while the worker has no room is topped up once an outcome frees some', {
  timeout: 60_000,
}, async (t) => {
  const { toppedUpAt, firstRecordedAt } = await drainedWhileFull(t, { failFirstTopUp: false });
  const waited = toppedUpAt - firstRecordedAt;
  assert.ok(firstRecordedAt > 0 && waited < 1_500, `the top-up came ${waited} ms after the first outcome was recorded`);
});

test('an endpoint whose top-up claim fails is not left out of the claims that follow', {
  timeout: 60_000,
}, async (t) => {
  // The drained endpoint's top-up fails: it holds nothing, so no finished attempt asks for another top-up.
  // Left marked, every later general claim (the whole-queue one too) would skip it for good.
  const { toppedUpAt, topUpFailedAt } = await drainedWhileFull(t, { failFirstTopUp: true });
  const waited = toppedUpAt - topUpFailedAt;
  assert.ok(
    topUpFailedAt > 0 && waited < 3_000,
    `its next attempt came ${waited} ms after the failed top-up (the pause after a failed claim is 1 s)`,
  );
});

/** The queue's methods bound to it, to override one. */
function bind(queue: Store['queue']): WorkerQueue {
  return {
    claimLoaded: queue.claimLoaded.bind(queue),
    release: queue.release.bind(queue),
    nextDueAt: queue.nextDueAt.bind(queue),
    extendLease: queue.extendLease.bind(queue),
    load: queue.load.bind(queue),
    endpointsNow: queue.endpointsNow.bind(queue),
    drop: queue.drop.bind(queue),
    completeMany: queue.completeMany.bind(queue),
    takeStarts: queue.takeStarts.bind(queue),
    advanceFifo: queue.advanceFifo.bind(queue),
  };
}
