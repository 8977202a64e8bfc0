import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { PARKED_AT } from '../../../src/domain/fifo.js';
import { attemptRow, type DeliveryState, outcomePlan, taskKey } from '../../../src/domain/outcome-plan.js';
import {
  EMPTY_QUEUE,
  isHeld,
  pick,
  type QueueColumns,
  queuedHead,
  type WaitingAttempt,
  waitingOf,
  withAttempt,
  withManual,
  withoutHead,
} from '../../../src/domain/queue-slot.js';
import type { AttemptTrigger, DeliveryStatus } from '../../../src/domain/states.js';

// The rules of a delivery's queue (src/domain/queue-slot.ts), as properties: each function on its own over
// arbitrary queues, then a delivery's whole life (claims, outcomes through the planner, manual retries,
// leases running out, a FIFO turn) checked after every step.

const NOW = 10_000_000;
const LEASE_MS = 60_000;
const HOUR = 3_600_000;

const numbersOf = (queue: QueueColumns) => [
  ...(queue.next_attempt === null ? [] : [queue.next_attempt]),
  ...waitingOf(queue).map((w) => w.number),
];

/** The shape every queue keeps: a head or nothing, a lease only on a head, nothing behind no head, no empty list. */
function assertWellFormed(queue: QueueColumns, where: string): void {
  const head = queue.run_at !== null;
  assert.equal(queue.next_trigger !== null, head, `${where}: a trigger exactly with a head`);
  assert.equal(queue.next_attempt !== null, head, `${where}: a number exactly with a head`);
  if (!head) {
    assert.equal(queue.lease_owner, null, `${where}: no lease without a head`);
    assert.equal(queue.queued_after, null, `${where}: nothing waits behind no head`);
  }
  assert.equal(queue.lease_owner === null, queue.lease_until === null, `${where}: a lease has an owner and an end`);
  if (queue.queued_after !== null)
    assert.ok(waitingOf(queue).length > 0, `${where}: queued_after is never an empty list`);
  for (const w of waitingOf(queue))
    assert.equal(w.runAt === null, w.trigger === 'manual', `${where}: a waiting attempt has a time iff scheduled`);
  const numbers = numbersOf(queue);
  assert.equal(new Set(numbers).size, numbers.length, `${where}: numbers unique: ${numbers}`);
}

// Arbitrary queues ---------------------------------------------------------------------------------------

const triggerArb = fc.constantFrom<AttemptTrigger>('scheduled', 'manual');
/** When a scheduled attempt is due: long past, just past, later, or parked (a FIFO endpoint's). */
const runAtArb = fc.constantFrom(NOW - HOUR, NOW - 1, NOW + 1, NOW + HOUR, PARKED_AT);
const waitingArb = (numbers: number[]): fc.Arbitrary<WaitingAttempt[]> =>
  fc.tuple(...numbers.map(() => fc.tuple(triggerArb, runAtArb))).map((specs) =>
    specs.map(([trigger, runAt], i) => ({
      number: numbers[i]!,
      trigger,
      runAt: trigger === 'manual' ? null : runAt,
    })),
  );

/** Distinct attempt numbers, in random order. */
const numbersArb = fc
  .uniqueArray(fc.integer({ min: 1, max: 12 }), { minLength: 0, maxLength: 5 })
  .chain((numbers) => fc.shuffledSubarray(numbers, { minLength: numbers.length, maxLength: numbers.length }));

type Lease = 'none' | 'held' | 'ran out';

/**
 * A queue as the rules leave it: a head (waiting, parked, held, or whose lease ran out) and attempts behind
 * it, of which at most one is scheduled (a schedule queues its next attempt only once the one before ended).
 */
const queueArb: fc.Arbitrary<{ queue: QueueColumns; seq: number }> = numbersArb.chain((numbers) =>
  fc
    .record({
      headTrigger: triggerArb,
      headRunAt: runAtArb,
      lease: fc.constantFrom<Lease>('none', 'held', 'ran out'),
      waiting: waitingArb(numbers.slice(1)).map((line) => {
        const first = line.findIndex((w) => w.trigger === 'scheduled');
        return line.map((w, i) =>
          i > first && w.trigger === 'scheduled' ? { ...w, trigger: 'manual' as const, runAt: null } : w,
        );
      }),
      extraSeq: fc.integer({ min: 0, max: 3 }),
    })
    .map(({ headTrigger: asked, headRunAt, lease, waiting, extraSeq }) => {
      const seq = Math.max(0, ...numbers) + extraSeq;
      const headTrigger = waiting.some((w) => w.trigger === 'scheduled') ? 'manual' : asked;
      if (numbers.length === 0) return { queue: EMPTY_QUEUE, seq };
      // A held head was due when claimed; a manual head is due from when it was asked.
      const runAt = lease !== 'none' || headTrigger === 'manual' ? Math.min(headRunAt, NOW - 1) : headRunAt;
      const queue: QueueColumns = {
        ...queuedHead(numbers[0]!, headTrigger, runAt),
        lease_owner: lease === 'none' ? null : 'wrk_a',
        lease_until: lease === 'none' ? null : lease === 'held' ? NOW + LEASE_MS : NOW - 1,
        queued_after: waiting.length === 0 ? null : JSON.stringify(waiting),
      };
      return { queue, seq };
    }),
);

const statusArb = fc.constantFrom<DeliveryStatus>('pending', 'success', 'failed', 'disabled');

// The functions on their own -----------------------------------------------------------------------------

test('withoutHead: the waiting attempt due soonest is the head, the others wait in their order, no lease', () => {
  fc.assert(
    fc.property(numbersArb.chain(waitingArb), fc.boolean(), fc.boolean(), (waiting, dropScheduled, fifo) => {
      const queue = withoutHead(waiting, NOW, { dropScheduled, fifo });
      assertWellFormed(queue, 'withoutHead');
      const kept = waiting.filter((w) => !(dropScheduled && w.trigger === 'scheduled'));
      // Nothing is lost but what is dropped, and nothing is renumbered.
      assert.deepEqual(
        numbersOf(queue).sort((a, b) => a - b),
        kept.map((w) => w.number).sort((a, b) => a - b),
      );
      if (kept.length === 0) return assert.deepEqual(queue, EMPTY_QUEUE);
      assert.equal(queue.lease_owner, null);
      const due = (w: WaitingAttempt) => (w.runAt === null ? NOW : !fifo && w.runAt >= PARKED_AT ? NOW : w.runAt);
      const head = kept.find((w) => w.number === queue.next_attempt)!;
      assert.equal(queue.next_trigger, head.trigger);
      assert.equal(queue.run_at, due(head), 'due as its time says (a manual one now; parked only on a FIFO endpoint)');
      const manual = kept.filter((w) => w.trigger === 'manual');
      if (manual.length > 0) {
        // A manual attempt waits for no scheduled one, however overdue: the first manual one in line.
        assert.equal(head, manual[0]);
      } else {
        for (const w of kept) assert.ok(due(head) <= due(w), `#${head.number} is due no later than #${w.number}`);
        // Of those due at once, the first in line.
        assert.equal(
          kept.find((w) => due(w) === due(head)),
          head,
        );
      }
      assert.deepEqual(
        waitingOf(queue),
        kept.filter((w) => w !== head),
      );
      if (dropScheduled) {
        assert.equal(queue.next_trigger, 'manual', 'only manual attempts are left');
        assert.ok(waitingOf(queue).every((w) => w.trigger === 'manual'));
      }
    }),
    { numRuns: 500 },
  );
});

test('withAttempt: an attempt waits behind the head, which keeps its lease; with no head it is the head', () => {
  fc.assert(
    fc.property(queueArb, triggerArb, runAtArb, ({ queue, seq }, trigger, runAt) => {
      const attempt: WaitingAttempt = { number: seq + 1, trigger, runAt: trigger === 'manual' ? null : runAt };
      const after = withAttempt(queue, attempt, NOW);
      assertWellFormed(after, 'withAttempt');
      if (queue.run_at === null) {
        assert.deepEqual(after, withoutHead([...waitingOf(queue), attempt], NOW));
        return;
      }
      const { queued_after: _, ...head } = queue;
      const { queued_after: __, ...headAfter } = after;
      assert.deepEqual(headAfter, head, 'the head and its lease are untouched');
      assert.deepEqual(waitingOf(after), [...waitingOf(queue), attempt], 'last in line');
    }),
    { numRuns: 500 },
  );
});

test('withManual: the next number; it goes ahead of an unheld scheduled attempt, taking its number, else waits behind the head', () => {
  fc.assert(
    fc.property(queueArb, statusArb, fc.integer({ min: 0, max: 14 }), ({ queue }, status, madeUpTo) => {
      const next = withManual({ ...queue, status }, NOW, madeUpTo);
      assertWellFormed(next.queue, 'withManual');
      // Numbered after every attempt made or queued: a dropped attempt's number may come again, never a made one's.
      const seq = Math.max(madeUpTo, ...numbersOf(queue));
      assert.equal(next.attempt_seq, seq + 1, 'the next number after every attempt made or queued');
      assert.equal(next.status, status === 'failed' || status === 'disabled' ? 'pending' : status);
      // Every attempt queued before is still queued, and one more: numbers stay unique.
      assert.equal(numbersOf(next.queue).length, numbersOf(queue).length + 1);
      assert.ok(numbersOf(next.queue).every((n) => n <= seq + 1));
      const waiting = waitingOf(queue);
      const scheduledBehind = waiting.findIndex((w) => w.trigger === 'scheduled');
      const waitingScheduledHead = queue.run_at !== null && queue.next_trigger === 'scheduled' && !isHeld(queue, NOW);
      if (queue.run_at === null) {
        assert.equal(next.number, seq + 1);
        assert.deepEqual(next.queue, queuedHead(seq + 1, 'manual', NOW), 'with nothing queued it is the head');
      } else if (waitingScheduledHead) {
        // A manual retry waits for nothing: it is the head, due now, held by no one, with the head's number.
        assert.equal(next.number, queue.next_attempt, "it takes the scheduled head's number");
        assert.deepEqual({ ...next.queue, queued_after: null }, queuedHead(next.number, 'manual', NOW));
        assert.deepEqual(
          waitingOf(next.queue),
          [{ number: seq + 1, trigger: 'scheduled', runAt: queue.run_at }, ...waiting],
          'the scheduled attempt waits first in line, numbered next, at its own time',
        );
      } else {
        // Held (under way), or a manual attempt: the new one waits behind it, the head untouched.
        const { queued_after: _, ...head } = queue;
        const { queued_after: __, ...headAfter } = next.queue;
        assert.deepEqual(headAfter, head);
        if (scheduledBehind < 0) {
          assert.equal(next.number, seq + 1);
          assert.deepEqual(waitingOf(next.queue), [...waiting, { number: seq + 1, trigger: 'manual', runAt: null }]);
        } else {
          // A scheduled attempt waits behind the head too: the manual one takes its number, and it the next.
          assert.equal(next.number, waiting[scheduledBehind]!.number);
          assert.deepEqual(waitingOf(next.queue), [
            ...waiting.map((w, i) => (i === scheduledBehind ? { ...w, number: seq + 1 } : w)),
            { number: next.number, trigger: 'manual', runAt: null },
          ]);
        }
        // And once the head is gone, it goes before every scheduled attempt, whenever that is due.
        for (const fifo of [true, false]) {
          const after = withoutHead(waitingOf(next.queue), NOW + HOUR, { fifo });
          assert.equal(after.next_trigger, 'manual');
        }
        const scheduledNumbers = waitingOf(next.queue)
          .filter((w) => w.trigger === 'scheduled')
          .map((w) => w.number);
        assert.ok(
          scheduledNumbers.every((n) => n > next.number),
          'numbered before every scheduled attempt',
        );
      }
    }),
    { numRuns: 1_000 },
  );
});

// A delivery's life --------------------------------------------------------------------------------------

const SCHEDULE = [0, 0, 1_000, 60_000];

type Step =
  | { kind: 'wait'; ms: number }
  | { kind: 'claim'; owner: 'wrk_a' | 'wrk_b' }
  | { kind: 'outcome'; ok: boolean }
  | { kind: 'manual' }
  | { kind: 'unpark' };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('wait' as const),
      ms: fc.constantFrom(1, 500, 2_000, LEASE_MS + 1, HOUR),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('claim' as const),
      owner: fc.constantFrom('wrk_a' as const, 'wrk_b' as const),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('outcome' as const), ok: fc.boolean() }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'manual' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'unpark' as const }) },
);

interface Life {
  now: number;
  delivery: DeliveryState;
  /** The numbers of the attempts made (recorded as their worker's), in order. */
  made: number[];
  /**
   * Which scheduled attempt is queued: a new one with each scheduled outcome (the next one queued after a
   * failure). Its number may change (withManual), so it is told apart by this.
   */
  scheduled: number;
  /** Per manual attempt still queued: the scheduled attempt it must go before (unheld when it was asked). */
  manualAhead: Map<number, number | null>;
}

/** One step of a delivery's life, as the store applies it. */
function step(life: Life, s: Step, fifo: boolean): void {
  const { delivery } = life;
  const queue = pick(delivery);
  switch (s.kind) {
    case 'wait':
      life.now += s.ms;
      return;
    case 'claim':
      // A claim takes a due head no one holds (src/store/queue/driver.ts, dueQuery).
      if (queue.run_at !== null && queue.run_at <= life.now && !isHeld(queue, life.now))
        Object.assign(delivery, { lease_owner: s.owner, lease_until: life.now + LEASE_MS });
      return;
    case 'unpark':
      // advanceFifo: the head of a FIFO endpoint, its scheduled attempt parked, is due now.
      if (queue.next_trigger === 'scheduled' && queue.run_at !== null && queue.run_at >= PARKED_AT)
        delivery.run_at = life.now;
      return;
    case 'manual': {
      const unheld =
        (queue.next_trigger === 'scheduled' && !isHeld(queue, life.now)) ||
        waitingOf(queue).some((w) => w.trigger === 'scheduled');
      const next = withManual({ ...queue, status: delivery.status }, life.now, Math.max(0, ...life.made));
      Object.assign(delivery, next.queue, { status: next.status, attempt_seq: next.attempt_seq });
      life.manualAhead.set(next.number, unheld ? life.scheduled : null);
      return;
    }
    case 'outcome': {
      // The outcome of the head's attempt, recorded by the worker that claimed it (its lease may have run
      // out meanwhile: no one claimed it since), through the planner.
      if (queue.lease_owner === null) return;
      const owner = queue.lease_owner!;
      const task = {
        id: taskKey('dlv_life', queue.next_attempt!),
        delivery_id: 'dlv_life',
        endpoint_id: 'ep_life',
        trigger: queue.next_trigger!,
        attempt_number: queue.next_attempt!,
        leaseUntil: queue.lease_until!,
      };
      const result = {
        ok: s.ok,
        responseStatus: s.ok ? 200 : 500,
        responseBody: null,
        error: s.ok ? null : 'HTTP 500',
        durationMs: 1,
        retryAfterMs: null,
        at: life.now,
      };
      const item = { input: { task, endpoint: { id: 'ep_life', status: 'active' as const, fifo } }, result };
      const plan = outcomePlan(
        [item],
        owner,
        {
          written: new Set([attemptRow(task, result, owner).id]),
          inline: new Set(),
          deliveries: new Map([['dlv_life', { ...delivery }]]),
          endpoints: new Map([['ep_life', { status: 'active', failingSince: null, exhaustedAt: null }]]),
        },
        { retryScheduleMs: SCHEDULE, disableAfterMs: 24 * HOUR, now: life.now, random: () => 0.5 },
      );
      assert.deepEqual(plan.owned, [true], 'the head under its lease is its holder’s');
      for (const change of plan.deliveries) {
        delivery.attempt_count += change.attemptsAdded;
        if (change.status !== undefined) delivery.status = change.status;
        if (change.schedule_step !== undefined) delivery.schedule_step = change.schedule_step;
        if (change.attempt_seq !== undefined) delivery.attempt_seq = change.attempt_seq;
        if (change.queue !== undefined) Object.assign(delivery, change.queue);
      }
      life.made.push(task.attempt_number);
      if (task.trigger === 'manual') life.manualAhead.delete(task.attempt_number);
      else {
        // No manual attempt asked while this one waited unheld is still queued: none waited behind it.
        for (const [manual, ahead] of life.manualAhead)
          assert.notEqual(ahead, life.scheduled, `scheduled #${task.attempt_number} made before manual #${manual}`);
        life.scheduled++;
      }
      if (s.ok)
        assert.ok(
          delivery.next_trigger !== 'scheduled' && waitingOf(pick(delivery)).every((w) => w.trigger === 'manual'),
          'a 2xx leaves only manual attempts',
        );
      return;
    }
  }
}

const claimAndFail: Step[] = [
  { kind: 'claim', owner: 'wrk_a' },
  { kind: 'outcome', ok: false },
];
const twice = (steps: Step[]) => [...steps, ...steps];

test("a delivery's life: numbers unique and made in order, a manual retry ahead of every waiting scheduled attempt", () => {
  fc.assert(
    fc.property(fc.boolean(), fc.array(stepArb, { maxLength: 40 }), (fifo, steps) => {
      const life: Life = {
        now: NOW,
        delivery: {
          status: 'pending',
          schedule_step: 0,
          attempt_seq: 1,
          attempt_count: 0,
          first_attempt_id: null,
          ...queuedHead(1, 'scheduled', fifo ? PARKED_AT : NOW),
        },
        made: [],
        scheduled: 1,
        manualAhead: new Map(),
      };
      for (const [i, s] of steps.entries()) {
        step(life, s, fifo);
        const where = `after step ${i} (${JSON.stringify(s)})`;
        const queue = pick(life.delivery);
        assertWellFormed(queue, where);
        const queued = numbersOf(queue);
        assert.ok(
          queued.every((n) => n <= life.delivery.attempt_seq),
          `${where}: numbered within attempt_seq`,
        );
        assert.ok(
          queued.every((n) => !life.made.includes(n)),
          `${where}: no number of an attempt made is queued again`,
        );
        assert.deepEqual(
          life.made,
          [...life.made].sort((a, b) => a - b),
          `${where}: attempts are made in the order of their numbers`,
        );
        assert.equal(new Set(life.made).size, life.made.length, `${where}: each number made once`);
        assert.equal(life.delivery.attempt_count, life.made.length);
        // A parked attempt is only ever on a FIFO endpoint.
        if (!fifo) assert.ok(queue.run_at === null || queue.run_at < PARKED_AT, `${where}: parked without FIFO`);
      }
    }),
    {
      numRuns: 2_000,
      examples: [
        // Two manual retries of a waiting retry: the second waits behind the first and, once it is made,
        // goes before the scheduled one (due as soon as it).
        [false, [{ kind: 'manual' }, { kind: 'manual' }, ...twice(claimAndFail)]],
        // A manual retry while an earlier one is under way, a retry waiting behind it for a later time:
        // the second is made before the retry, so it takes the retry's number.
        [
          false,
          [
            ...twice(claimAndFail),
            { kind: 'manual' },
            { kind: 'claim', owner: 'wrk_a' },
            { kind: 'manual' },
            ...twice(claimAndFail),
            { kind: 'wait', ms: 2_000 },
            ...twice(claimAndFail),
          ],
        ],
      ],
    },
  );
});
