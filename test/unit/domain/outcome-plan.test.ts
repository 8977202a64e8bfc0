import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AttemptTrigger } from '../../../src/domain/states.js';
import type { EndpointHealth } from '../../../src/domain/endpoint-state.js';
import { PARKED_AT } from '../../../src/domain/fifo.js';
import {
  announcedTrouble,
  attemptRow,
  type DeliveryState,
  deliveriesToRead,
  endpointsToRead,
  type OutcomeItem,
  type OutcomeResult,
  type OutcomeState,
  outcomePlan,
  placeAttempts,
  recordingPlan,
  taskKey,
} from '../../../src/domain/outcome-plan.js';
import { EMPTY_QUEUE, queuedHead, type WaitingAttempt } from '../../../src/domain/queue-slot.js';

// The outcome planner, case by case: what a batch of attempt outcomes does to deliveries (their counters,
// status and queue columns) and endpoints, and the events it reports. The planner reads nothing; each case
// hands it the state, and it decides from each delivery's lease whether an outcome's attempt was still ours.

const OWNER = 'wrk_plan';
const NOW = 1_000_000;
const HOUR = 3_600_000;
/** The lease end a claim wrote. */
const LEASE = NOW + 60_000;
const RULES = {
  retryScheduleMs: [0, HOUR, 2 * HOUR],
  disableAfterMs: 24 * HOUR,
  now: NOW,
  // The middle of the jitter: each delay is the schedule's own.
  random: () => 0.5,
};

interface ItemOptions {
  trigger?: AttemptTrigger;
  at?: number;
  endpoint?: string | null;
  endpointStatus?: 'active' | 'failing' | 'disabled';
  retryAfterMs?: number | null;
  /** The attempt's number (1). */
  number?: number;
  /** The lease end its claim wrote (LEASE). */
  leaseUntil?: number;
  fifo?: boolean;
  /** The endpoint's own retry schedule (absent: RULES'). */
  schedule?: number[];
}

/** An outcome of delivery dlv_<n>'s attempt, claimed under LEASE unless told otherwise. */
function item(
  n: number,
  status: number,
  {
    trigger = 'scheduled',
    at = NOW - 10,
    endpoint = 'ep_1',
    endpointStatus = 'active',
    retryAfterMs = null,
    number = 1,
    leaseUntil = LEASE,
    fifo,
    schedule,
  }: ItemOptions = {},
): OutcomeItem {
  const ok = status >= 200 && status < 300;
  const result: OutcomeResult = {
    ok,
    responseStatus: status,
    responseBody: '',
    error: ok ? null : `HTTP ${status}`,
    durationMs: 5,
    retryAfterMs,
    at,
  };
  return {
    input: {
      task: {
        id: taskKey(`dlv_${n}`, number),
        delivery_id: `dlv_${n}`,
        endpoint_id: endpoint ?? 'ep_gone',
        trigger,
        attempt_number: number,
        leaseUntil,
      },
      endpoint:
        endpoint === null ? null : { id: endpoint, status: endpointStatus, fifo, retryScheduleMs: schedule ?? null },
    },
    result,
  };
}

const fresh = (over: Partial<DeliveryState> = {}): DeliveryState => ({
  status: 'pending',
  schedule_step: 0,
  attempt_seq: 1,
  attempt_count: 0,
  first_attempt_id: null,
  ...EMPTY_QUEUE,
  ...over,
});

/** A delivery whose head is `item`'s attempt, held by `owner` under the item's lease (as its claim left it). */
const held = (of: OutcomeItem, over: Partial<DeliveryState> = {}, owner = OWNER): DeliveryState => {
  const { task } = of.input;
  return fresh({
    run_at: NOW - 60_000,
    next_trigger: task.trigger,
    next_attempt: task.attempt_number,
    lease_owner: owner,
    lease_until: task.leaseUntil,
    ...over,
  });
};

const behind = (...waiting: WaitingAttempt[]) => JSON.stringify(waiting);

/**
 * The state after a first recording of `items`: every attempt new, each delivery's head the attempt of its
 * first item, held by us, unless told otherwise.
 */
function state(items: OutcomeItem[], over: Partial<OutcomeState> = {}): OutcomeState {
  const { attempts } = recordingPlan(items, OWNER);
  const deliveries = new Map<string, DeliveryState>();
  for (const of of items)
    if (!deliveries.has(of.input.task.delivery_id)) deliveries.set(of.input.task.delivery_id, held(of));
  return {
    written: new Set(attempts.map((a) => a.id)),
    inline: new Set(),
    deliveries,
    endpoints: new Map(),
    ...over,
  };
}

const healthy: EndpointHealth = { status: 'active', failingSince: null, exhaustedAt: null };

test('recordingPlan: one attempt row per outcome, the same row for the same outcome of the same claim only', () => {
  const items = [item(1, 200), item(2, 500)];
  const { attempts, pauses } = recordingPlan(items, OWNER);
  assert.deepEqual(
    attempts.map((a) => [a.delivery_id, a.attempt_number, a.status, a.response_status]),
    [
      ['dlv_1', 1, 'success', 200],
      ['dlv_2', 1, 'failed', 500],
    ],
  );
  assert.deepEqual(pauses, []);
  const [first] = items;
  assert.equal(attempts[0]!.id, attemptRow(first!.input.task, first!.result, OWNER).id, 'recorded again: the same row');
  assert.notEqual(attempts[0]!.id, attemptRow(first!.input.task, first!.result, 'wrk_other').id, 'another worker');
  assert.notEqual(
    attempts[0]!.id,
    attemptRow({ ...first!.input.task, leaseUntil: LEASE + 1 }, first!.result, OWNER).id,
    'the same attempt claimed again after its lease ran out: a request of its own',
  );
  // Every outcome's delivery is read, once: whether its attempt was ours is known from its lease.
  assert.deepEqual(deliveriesToRead([...items, item(1, 500, { leaseUntil: LEASE - 1 })]), ['dlv_1', 'dlv_2']);
});

test('placeAttempts: a first attempt that delivered under its lease goes on its delivery row, every other is a row', () => {
  const items = [
    item(1, 200),
    item(2, 500),
    item(3, 200, { number: 2 }),
    item(4, 204, { trigger: 'manual', number: 2 }),
    item(5, 200, { leaseUntil: LEASE - 1 }),
    item(6, 200),
  ];
  const { attempts } = recordingPlan(items, OWNER);
  const deliveries = new Map<string, DeliveryState>(items.map((of) => [of.input.task.delivery_id, held(of)]));
  // dlv_5's lease is another claim's: not ours. dlv_6 holds a first attempt already (another worker's).
  deliveries.set('dlv_5', held(items[4]!, { lease_until: LEASE }));
  deliveries.set('dlv_6', held(items[5]!, { first_attempt_id: 'att_other' }));
  const placement = placeAttempts(items, attempts, OWNER, deliveries);
  assert.deepEqual(
    placement.inline.map((a) => a.delivery_id),
    ['dlv_1'],
    'only a first scheduled attempt, delivered, ours, on a row with none',
  );
  assert.deepEqual(
    placement.rows.map((a) => a.delivery_id),
    ['dlv_2', 'dlv_3', 'dlv_4', 'dlv_5', 'dlv_6'],
  );

  // Recorded again: the row holds it, so it goes nowhere and is not written again.
  const recorded = new Map([
    ['dlv_1', fresh({ status: 'success', attempt_count: 1, first_attempt_id: attempts[0]!.id })],
  ]);
  assert.deepEqual(placeAttempts([items[0]!], [attempts[0]!], OWNER, recorded), { inline: [], rows: [] });
  // A success recorded with a note (its answer could not be stored) keeps its error: it is a row.
  const noted = [item(1, 200)];
  const [withNote] = recordingPlan(noted, OWNER).attempts;
  const notedPlacement = placeAttempts(
    noted,
    [{ ...withNote!, error: "the receiver's answer could not be stored" }],
    OWNER,
    new Map([['dlv_1', held(noted[0]!)]]),
  );
  assert.deepEqual([notedPlacement.inline.length, notedPlacement.rows.length], [0, 1]);
  // The same outcome twice in one batch: placed once.
  assert.deepEqual(
    placeAttempts([items[0]!, items[0]!], [attempts[0]!, attempts[0]!], OWNER, new Map([['dlv_1', held(items[0]!)]])),
    { inline: [attempts[0]!], rows: [] },
  );
  // Two outcomes of one delivery's first attempt (its own and an older claim's): one first attempt only.
  const twice = [item(1, 200), item(1, 200, { at: NOW - 5 })];
  const both = recordingPlan(twice, OWNER).attempts;
  const one = placeAttempts(twice, both, OWNER, new Map([['dlv_1', held(twice[0]!)]]));
  assert.deepEqual([one.inline.length, one.rows.length], [1, 1]);

  // The plan carries the placed attempt in its delivery's change, counted once.
  const plan = outcomePlan([items[0]!], OWNER, state([items[0]!], { inline: new Set([attempts[0]!.id]) }), RULES);
  assert.equal(plan.deliveries.length, 1);
  assert.deepEqual(plan.deliveries[0]!.first, attempts[0]);
  assert.equal(plan.deliveries[0]!.attemptsAdded, 1);
  assert.equal(plan.deliveries[0]!.status, 'success');
});

test('a 2xx: the delivery is a success, its scheduled attempts gone and its manual ones kept, its endpoint healthy', () => {
  const items = [item(1, 200), item(2, 204, { at: NOW - 5 }), item(3, 200, { trigger: 'manual', at: NOW - 7 })];
  const deliveries = new Map([
    ['dlv_1', held(items[0]!)],
    // A manual attempt asked while the head was under way waits behind it: it is the head now, due at once.
    ['dlv_2', held(items[1]!, { attempt_seq: 2, queued_after: behind({ number: 2, trigger: 'manual', runAt: null }) })],
    // A manual head that jumped a scheduled one: the scheduled one goes, the manual one behind it stays.
    [
      'dlv_3',
      held(items[2]!, {
        attempt_seq: 3,
        queued_after: behind(
          { number: 2, trigger: 'scheduled', runAt: NOW + HOUR },
          { number: 3, trigger: 'manual', runAt: null },
        ),
      }),
    ],
  ]);
  const plan = outcomePlan(items, OWNER, state(items, { deliveries }), RULES);
  assert.deepEqual(plan.owned, [true, true, true]);
  assert.deepEqual(plan.deliveries, [
    { id: 'dlv_1', attemptsAdded: 1, status: 'success', queue: EMPTY_QUEUE, updated_at: NOW },
    { id: 'dlv_2', attemptsAdded: 1, status: 'success', queue: queuedHead(2, 'manual', NOW), updated_at: NOW },
    { id: 'dlv_3', attemptsAdded: 1, status: 'success', queue: queuedHead(3, 'manual', NOW), updated_at: NOW },
  ]);
  assert.deepEqual(plan.healthy, { ids: ['ep_1'], at: NOW - 5 });
  assert.deepEqual(plan.health, []);
  assert.deepEqual(plan.events, [], 'a first attempt that succeeds recovers nothing');
});

test("a 2xx of an attempt no longer ours delivers too: another worker's scheduled head goes, a manual one stays", () => {
  // Our lease ran out and another worker claimed the delivery's head meanwhile.
  const items = [item(1, 200, { leaseUntil: LEASE - 1 }), item(2, 200, { trigger: 'manual', leaseUntil: LEASE - 1 })];
  const manualBehind = behind(
    { number: 2, trigger: 'scheduled', runAt: NOW + HOUR },
    { number: 3, trigger: 'manual', runAt: null },
  );
  const deliveries = new Map([
    ['dlv_1', held(items[0]!, { lease_until: LEASE }, 'wrk_other')],
    ['dlv_2', held(items[1]!, { lease_until: LEASE, attempt_seq: 3, queued_after: manualBehind }, 'wrk_other')],
  ]);
  const plan = outcomePlan(items, OWNER, state(items, { deliveries }), RULES);
  assert.deepEqual(plan.owned, [false, false]);
  assert.deepEqual(plan.deliveries, [
    { id: 'dlv_1', attemptsAdded: 1, status: 'success', queue: EMPTY_QUEUE, updated_at: NOW },
    {
      id: 'dlv_2',
      attemptsAdded: 1,
      status: 'success',
      // The other worker keeps its manual head and its lease; only the scheduled attempt behind it goes.
      queue: {
        ...onlyQueue(deliveries.get('dlv_2')!),
        queued_after: behind({ number: 3, trigger: 'manual', runAt: null }),
      },
      updated_at: NOW,
    },
  ]);
  assert.equal(plan.healthy, null, 'an outcome not ours moves no endpoint');
});

/** The queue columns of a delivery state. */
function onlyQueue(d: DeliveryState) {
  const { run_at, next_trigger, next_attempt, lease_owner, lease_until, queued_after } = d;
  return { run_at, next_trigger, next_attempt, lease_owner, lease_until, queued_after };
}

test('a 2xx of a delivery that was failing or exhausted is a recovery; after fewer failures or a success it is not', () => {
  const items = [item(1, 200), item(2, 200), item(3, 200), item(4, 200, { trigger: 'manual' })];
  const deliveries = new Map([
    // Three failed attempts: delivery.failing was sent.
    ['dlv_1', held(items[0]!, { attempt_count: 3, schedule_step: 3 })],
    ['dlv_2', held(items[1]!, { status: 'success', attempt_count: 3 })],
    // Two failures: nothing was sent, so nothing recovers.
    ['dlv_3', held(items[2]!, { attempt_count: 2, schedule_step: 2 })],
    // Its last scheduled attempt failed (delivery.exhausted), on a schedule of three.
    ['dlv_4', held(items[3]!, { status: 'failed', attempt_count: 3, schedule_step: 3 })],
  ]);
  const plan = outcomePlan(items, OWNER, state(items, { deliveries }), RULES);
  assert.deepEqual(plan.events, [
    { type: 'delivery.recovered', deliveryId: 'dlv_1', endpointId: 'ep_1', at: NOW - 10 },
    { type: 'delivery.recovered', deliveryId: 'dlv_4', endpointId: 'ep_1', at: NOW - 10 },
  ]);
  const short = { ...RULES, retryScheduleMs: [0] };
  const one = [item(1, 200, { trigger: 'manual' })];
  const exhaustedOnce = new Map([['dlv_1', held(one[0]!, { status: 'failed', attempt_count: 1, schedule_step: 1 })]]);
  assert.deepEqual(
    outcomePlan(one, OWNER, state(one, { deliveries: exhaustedOnce }), short).events.map((e) => e.type),
    ['delivery.recovered'],
    'exhausted after one attempt (a schedule of one) recovers too',
  );
});

test('announcedTrouble: failing from the third failed attempt, or exhausted; never once delivered', () => {
  assert.equal(announcedTrouble(fresh({ attempt_count: 2 }), 3), false);
  assert.equal(announcedTrouble(fresh({ attempt_count: 3 }), 3), true);
  assert.equal(announcedTrouble(fresh({ status: 'failed', attempt_count: 1, schedule_step: 1 }), 1), true);
  assert.equal(announcedTrouble(fresh({ status: 'failed', attempt_count: 1, schedule_step: 0 }), 3), false);
  assert.equal(announcedTrouble(fresh({ status: 'success', attempt_count: 5 }), 3), false);
});

test('a failure with the schedule left queues the next scheduled attempt, Retry-After when it asks for longer', () => {
  const items = [item(1, 500, { at: NOW }), item(2, 503, { at: NOW, retryAfterMs: 5 * HOUR })];
  const plan = outcomePlan(items, OWNER, state(items, { endpoints: new Map([['ep_1', healthy]]) }), RULES);
  assert.deepEqual(plan.owned, [true, true]);
  const after = { attemptsAdded: 1, updated_at: NOW, status: 'pending', schedule_step: 1, attempt_seq: 2 };
  assert.deepEqual(plan.deliveries, [
    // The lease is gone with the attempt: the next one waits for its time, held by no one.
    { id: 'dlv_1', ...after, queue: queuedHead(2, 'scheduled', NOW + HOUR) },
    { id: 'dlv_2', ...after, queue: queuedHead(2, 'scheduled', NOW + 5 * HOUR) },
  ]);
  assert.deepEqual(plan.health, [
    { id: 'ep_1', health: { status: 'failing', failingSince: NOW, exhaustedAt: null }, at: NOW },
  ]);
  assert.equal(plan.healthy, null);
  assert.deepEqual(plan.events, []);
});

test('a failure behind which a manual attempt waits: the manual one is due first, the next scheduled one waits behind', () => {
  const items = [item(1, 500, { at: NOW })];
  const deliveries = new Map([
    ['dlv_1', held(items[0]!, { attempt_seq: 2, queued_after: behind({ number: 2, trigger: 'manual', runAt: null }) })],
  ]);
  const plan = outcomePlan(items, OWNER, state(items, { deliveries }), RULES);
  assert.deepEqual(plan.deliveries, [
    {
      id: 'dlv_1',
      attemptsAdded: 1,
      updated_at: NOW,
      status: 'pending',
      schedule_step: 1,
      attempt_seq: 3,
      queue: {
        ...queuedHead(2, 'manual', NOW),
        queued_after: behind({ number: 3, trigger: 'scheduled', runAt: NOW + HOUR }),
      },
    },
  ]);
});

test("an endpoint's own retry schedule decides the next delay and when the schedule runs out", () => {
  const own = [0, 30_000];
  // Its second step: 30 s, where the service's is an hour.
  const first = [item(1, 500, { at: NOW, schedule: own })];
  const retried = outcomePlan(first, OWNER, state(first, { endpoints: new Map([['ep_1', healthy]]) }), RULES);
  assert.deepEqual(retried.deliveries[0]!.queue, queuedHead(2, 'scheduled', NOW + 30_000));
  // Its second attempt failing is its last: exhausted after two, where the service's schedule has three.
  const last = [item(1, 500, { at: NOW, number: 2, schedule: own })];
  const deliveries = new Map([['dlv_1', held(last[0]!, { schedule_step: 1, attempt_seq: 2, attempt_count: 1 })]]);
  const plan = outcomePlan(last, OWNER, state(last, { deliveries, endpoints: new Map([['ep_1', healthy]]) }), RULES);
  assert.deepEqual(plan.deliveries, [
    { id: 'dlv_1', attemptsAdded: 1, updated_at: NOW, status: 'failed', schedule_step: 2, queue: EMPTY_QUEUE },
  ]);
  assert.deepEqual(
    plan.events.map((e) => e.type),
    ['delivery.exhausted'],
  );
  // A success after it is a recovery: its schedule, not the service's, says it was exhausted.
  const exhausted: Partial<DeliveryState> = { status: 'failed', schedule_step: 2, attempt_seq: 3, attempt_count: 2 };
  const manual = [item(1, 200, { at: NOW, number: 3, trigger: 'manual', schedule: own })];
  const recovered = outcomePlan(
    manual,
    OWNER,
    state(manual, { deliveries: new Map([['dlv_1', held(manual[0]!, exhausted)]]) }),
    RULES,
  );
  assert.deepEqual(
    recovered.events.map((e) => e.type),
    ['delivery.recovered'],
  );
  const withService = [item(1, 200, { at: NOW, number: 3, trigger: 'manual' })];
  const notYet = outcomePlan(
    withService,
    OWNER,
    state(withService, { deliveries: new Map([['dlv_1', held(withService[0]!, exhausted)]]) }),
    RULES,
  );
  assert.deepEqual(notYet.events, [], "under the service's three steps it was neither failing nor exhausted");
});

test('the last scheduled attempt failing exhausts the delivery and, past HERALD_DISABLE_AFTER, disables the endpoint', () => {
  const items = [item(1, 500, { at: NOW, number: 3 })];
  const failing: EndpointHealth = { status: 'failing', failingSince: NOW - 25 * HOUR, exhaustedAt: null };
  const plan = outcomePlan(
    items,
    OWNER,
    state(items, {
      deliveries: new Map([['dlv_1', held(items[0]!, { schedule_step: 2, attempt_seq: 3, attempt_count: 2 })]]),
      endpoints: new Map([['ep_1', failing]]),
    }),
    RULES,
  );
  assert.deepEqual(plan.deliveries, [
    { id: 'dlv_1', attemptsAdded: 1, updated_at: NOW, status: 'failed', schedule_step: 3, queue: EMPTY_QUEUE },
  ]);
  assert.deepEqual(plan.health, [
    { id: 'ep_1', health: { status: 'disabled', failingSince: NOW - 25 * HOUR, exhaustedAt: NOW }, at: NOW },
  ]);
  assert.deepEqual(plan.events, [
    { type: 'delivery.failing', deliveryId: 'dlv_1', endpointId: 'ep_1', at: NOW },
    { type: 'delivery.exhausted', deliveryId: 'dlv_1', endpointId: 'ep_1', at: NOW },
    { type: 'endpoint.disabled', endpointId: 'ep_1', trigger: 'failures', at: NOW },
  ]);
});

test('a 410 disables the endpoint (gone); its delivery keeps its schedule for stopEndpoints to end', () => {
  const items = [item(1, 410, { at: NOW })];
  const plan = outcomePlan(items, OWNER, state(items, { endpoints: new Map([['ep_1', healthy]]) }), RULES);
  assert.equal(plan.health[0]!.health.status, 'disabled');
  assert.deepEqual(plan.deliveries[0]!.queue, queuedHead(2, 'scheduled', NOW + HOUR));
  assert.deepEqual(plan.events, [{ type: 'endpoint.disabled', endpointId: 'ep_1', trigger: 'gone', at: NOW }]);
});

test('a delivery never delivered is failing at its third failed attempt, once', () => {
  const after = (count: number) => {
    const items = [item(1, 500, { number: count + 1 })];
    const deliveries = new Map([['dlv_1', held(items[0]!, { attempt_count: count, schedule_step: count })]]);
    return outcomePlan(items, OWNER, state(items, { deliveries, endpoints: new Map([['ep_1', healthy]]) }), {
      ...RULES,
      retryScheduleMs: [0, 0, 0, 0, 0],
    }).events.map((e) => e.type);
  };
  assert.deepEqual(after(1), []);
  assert.deepEqual(after(2), ['delivery.failing']);
  assert.deepEqual(after(3), []);
  // Two failures in one batch that take it from 1 to 3: an attempt whose lease ran out (recorded, not
  // ours) and the same attempt claimed again. The second one is the third failure.
  const items = [
    item(1, 500, { number: 2, at: NOW - 2, leaseUntil: LEASE - 30_000 }),
    item(1, 500, { number: 2, at: NOW - 1 }),
  ];
  const deliveries = new Map([['dlv_1', held(items[1]!, { attempt_count: 1, schedule_step: 1, attempt_seq: 2 })]]);
  const plan = outcomePlan(items, OWNER, state(items, { deliveries }), RULES);
  assert.deepEqual(plan.owned, [false, true]);
  assert.deepEqual(
    plan.events.filter((e) => e.type === 'delivery.failing'),
    [{ type: 'delivery.failing', deliveryId: 'dlv_1', endpointId: 'ep_1', at: NOW - 1 }],
  );
});

test('an attempt another worker holds now: its attempt counts, but it moves neither the delivery nor the endpoint', () => {
  const items = [item(1, 500)];
  // The lease ran out and another worker claimed the same attempt.
  const deliveries = new Map([['dlv_1', held(items[0]!, { lease_until: LEASE + 5 }, 'wrk_other')]]);
  const endpoints = new Map([['ep_1', healthy]]);
  const plan = outcomePlan(items, OWNER, state(items, { deliveries, endpoints }), RULES);
  assert.deepEqual(plan.owned, [false]);
  assert.deepEqual(plan.deliveries, [{ id: 'dlv_1', attemptsAdded: 1, updated_at: NOW }]);
  assert.equal(plan.healthy, null);
  assert.deepEqual(plan.health, []);
  // Its endpoint is read all the same: whether an attempt was ours is known only from its delivery, read with it.
  assert.deepEqual(endpointsToRead(items), ['ep_1']);
});

test('an attempt is ours only under its own lease and number: not under an older claim of ours, nor once the head moved on', () => {
  const items = [item(1, 500)];
  const endpoints = new Map([['ep_1', healthy]]);
  const notOurs = (head: DeliveryState) =>
    outcomePlan(items, OWNER, state(items, { deliveries: new Map([['dlv_1', head]]), endpoints }), RULES);
  // Claimed again by us after the lease ran out: a later lease end.
  const reclaimed = notOurs(held(items[0]!, { lease_until: LEASE + 1 }));
  // Recorded, and the next attempt claimed by us in the same millisecond: the same lease end, the next number.
  const movedOn = notOurs(held(items[0]!, { next_attempt: 2, attempt_seq: 2 }));
  for (const plan of [reclaimed, movedOn]) {
    assert.deepEqual(plan.owned, [false]);
    assert.deepEqual(plan.deliveries, [{ id: 'dlv_1', attemptsAdded: 1, updated_at: NOW }]);
    assert.deepEqual(plan.health, []);
  }
  assert.deepEqual(notOurs(held(items[0]!)).owned, [true], 'under its own lease and number it is');
});

test('an outcome recorded before counts nothing: its lease went with the first recording, so it changes nothing', () => {
  const items = [item(1, 200)];
  const plan = outcomePlan(
    items,
    OWNER,
    state(items, {
      written: new Set(),
      deliveries: new Map([['dlv_1', fresh({ status: 'success', attempt_count: 1 })]]),
    }),
    RULES,
  );
  assert.deepEqual(plan.deliveries, []);
  assert.deepEqual(plan.owned, [false]);
  const failed = [item(1, 500)];
  const retrying = fresh({
    attempt_count: 1,
    schedule_step: 1,
    attempt_seq: 2,
    ...queuedHead(2, 'scheduled', NOW + HOUR),
  });
  const again = outcomePlan(
    failed,
    OWNER,
    state(failed, {
      written: new Set(),
      deliveries: new Map([['dlv_1', retrying]]),
      endpoints: new Map([['ep_1', healthy]]),
    }),
    RULES,
  );
  assert.deepEqual([again.owned, again.deliveries, again.health, again.events], [[false], [], [], []]);
  // A 2xx recorded again after a manual retry queued two attempts: the manual ones are left as they are.
  const manualAfter = fresh({
    status: 'success',
    attempt_count: 1,
    attempt_seq: 3,
    ...queuedHead(2, 'manual', NOW),
    queued_after: behind({ number: 3, trigger: 'manual', runAt: null }),
  });
  assert.deepEqual(
    outcomePlan(
      items,
      OWNER,
      state(items, { written: new Set(), deliveries: new Map([['dlv_1', manualAfter]]) }),
      RULES,
    ).deliveries,
    [],
  );
});

test('a failed manual attempt leaves a running schedule alone; with none left the delivery is failed', () => {
  const items = [item(1, 500, { trigger: 'manual', number: 2, at: NOW })];
  const scheduledBehind = behind({ number: 3, trigger: 'scheduled', runAt: NOW + HOUR });
  const running = outcomePlan(
    items,
    OWNER,
    state(items, {
      deliveries: new Map([['dlv_1', held(items[0]!, { attempt_seq: 3, queued_after: scheduledBehind })]]),
    }),
    RULES,
  );
  assert.deepEqual(running.deliveries, [
    { id: 'dlv_1', attemptsAdded: 1, updated_at: NOW, queue: queuedHead(3, 'scheduled', NOW + HOUR) },
  ]);
  const done = outcomePlan(items, OWNER, state(items), RULES);
  assert.deepEqual(done.deliveries, [
    { id: 'dlv_1', attemptsAdded: 1, updated_at: NOW, status: 'failed', queue: EMPTY_QUEUE },
  ]);
});

test("a FIFO endpoint's parked attempt stays parked when it becomes the head; another endpoint's is due at once", () => {
  const parked = behind({ number: 3, trigger: 'scheduled', runAt: PARKED_AT });
  const head = (fifo: boolean) => {
    const items = [item(1, 500, { trigger: 'manual', number: 2, at: NOW, fifo })];
    const deliveries = new Map([['dlv_1', held(items[0]!, { attempt_seq: 3, queued_after: parked })]]);
    return outcomePlan(items, OWNER, state(items, { deliveries }), RULES).deliveries[0]!.queue;
  };
  assert.deepEqual(head(true), queuedHead(3, 'scheduled', PARKED_AT));
  assert.deepEqual(head(false), queuedHead(3, 'scheduled', NOW));
});

test('two outcomes of one delivery in a batch apply in order: a late 2xx drops the retry the failure before it queued', () => {
  // Our failure of the head, then a 2xx of an earlier claim of the same delivery whose lease had run out.
  const items = [item(1, 500, { at: NOW - 2 }), item(1, 200, { at: NOW - 1, leaseUntil: LEASE - 30_000 })];
  const plan = outcomePlan(items, OWNER, state(items, { endpoints: new Map([['ep_1', healthy]]) }), RULES);
  assert.deepEqual(plan.owned, [true, false]);
  assert.deepEqual(plan.deliveries, [
    {
      id: 'dlv_1',
      attemptsAdded: 2,
      updated_at: NOW,
      status: 'success',
      schedule_step: 1,
      attempt_seq: 2,
      queue: EMPTY_QUEUE,
    },
  ]);
});

test('a failure of a delivery delivered in the same batch only gives up its head', () => {
  // A 2xx of an earlier claim whose lease ran out, then our failure of the manual head.
  const items = [
    item(1, 200, { at: NOW - 2, leaseUntil: LEASE - 30_000 }),
    item(1, 500, { trigger: 'manual', number: 2, at: NOW - 1 }),
  ];
  const deliveries = new Map([['dlv_1', held(items[1]!, { attempt_seq: 2 })]]);
  const plan = outcomePlan(items, OWNER, state(items, { deliveries }), RULES);
  assert.deepEqual(plan.owned, [false, true]);
  assert.deepEqual(plan.deliveries, [
    { id: 'dlv_1', attemptsAdded: 2, status: 'success', queue: EMPTY_QUEUE, updated_at: NOW - 1 },
  ]);
  assert.deepEqual(plan.events, [], 'a first failure announced nothing, so its success recovers nothing');
});

test('a 2xx after a third failure in the same batch recovers nothing: the failure announced nothing', () => {
  // Two failures before; then, in one batch, a failure of an earlier claim whose lease ran out (the third,
  // not announced: the delivery is delivered in the batch) and our 2xx of the head.
  const items = [item(1, 500, { number: 3, at: NOW - 2, leaseUntil: LEASE - 30_000 }), item(1, 200, { number: 3 })];
  const deliveries = new Map([['dlv_1', held(items[1]!, { attempt_count: 2, schedule_step: 2, attempt_seq: 3 })]]);
  const plan = outcomePlan(items, OWNER, state(items, { deliveries }), RULES);
  assert.deepEqual(plan.owned, [false, true]);
  assert.deepEqual(plan.deliveries, [
    { id: 'dlv_1', attemptsAdded: 2, status: 'success', queue: EMPTY_QUEUE, updated_at: NOW },
  ]);
  assert.deepEqual(plan.events, []);
  // Announced in the batch, it is over in the batch: an exhaustion, then a 2xx of an earlier claim.
  const exhausting = [
    item(2, 500, { number: 3, at: NOW - 2 }),
    item(2, 200, { number: 2, leaseUntil: LEASE - 30_000 }),
  ];
  const last = new Map([['dlv_2', held(exhausting[0]!, { attempt_count: 1, schedule_step: 2, attempt_seq: 3 })]]);
  assert.deepEqual(
    outcomePlan(exhausting, OWNER, state(exhausting, { deliveries: last }), RULES).events.map((e) => e.type),
    ['delivery.exhausted', 'delivery.recovered'],
  );
});

test('with its endpoint disabled or deleted, a failure stops the delivery without exhausting it', () => {
  const disabled = [item(1, 500, { endpointStatus: 'disabled' })];
  const plan = outcomePlan(disabled, OWNER, state(disabled), RULES);
  assert.equal(plan.deliveries[0]!.status, 'disabled');
  assert.deepEqual(plan.deliveries[0]!.queue, EMPTY_QUEUE);
  assert.deepEqual(plan.events, []);
  assert.deepEqual(endpointsToRead(disabled), []);
  const deleted = [item(2, 500, { endpoint: null })];
  assert.equal(outcomePlan(deleted, OWNER, state(deleted), RULES).deliveries[0]!.status, 'failed');
  assert.deepEqual(endpointsToRead(deleted), []);
});

test('a delivery removed meanwhile: its outcome is not ours and changes nothing', () => {
  const items = [item(1, 500)];
  const plan = outcomePlan(items, OWNER, state(items, { deliveries: new Map() }), RULES);
  assert.deepEqual([plan.owned, plan.deliveries, plan.health, plan.events], [[false], [], [], []]);
});

test("an endpoint's outcomes apply in order: a success after a failure leaves it active", () => {
  const items = [item(1, 500, { at: NOW - 2 }), item(2, 200, { at: NOW - 1 })];
  const failing: EndpointHealth = { status: 'failing', failingSince: NOW - HOUR, exhaustedAt: null };
  const plan = outcomePlan(items, OWNER, state(items, { endpoints: new Map([['ep_1', failing]]) }), RULES);
  assert.equal(plan.healthy, null, 'an endpoint with a failure here is written from what was read');
  assert.deepEqual(plan.health, [{ id: 'ep_1', health: healthy, at: NOW - 1 }]);
  const reversed = outcomePlan(
    [items[1]!, items[0]!],
    OWNER,
    state(items, { endpoints: new Map([['ep_1', failing]]) }),
    RULES,
  );
  assert.deepEqual(
    reversed.health,
    [{ id: 'ep_1', health: { status: 'failing', failingSince: NOW - 2, exhaustedAt: null }, at: NOW - 1 }],
    'the other way round, the success ends the run and the failure starts a new one',
  );
});

test('endpoints with only successes here are marked healthy without being read', () => {
  const items = [
    item(1, 200, { endpoint: 'ep_a', at: NOW - 3 }),
    item(2, 500, { endpoint: 'ep_b' }),
    item(3, 200, { endpoint: 'ep_c', at: NOW - 1 }),
  ];
  assert.deepEqual(endpointsToRead(items), ['ep_b']);
  const plan = outcomePlan(items, OWNER, state(items, { endpoints: new Map([['ep_b', healthy]]) }), RULES);
  assert.deepEqual(plan.healthy, { ids: ['ep_a', 'ep_c'], at: NOW - 1 });
});

test('a 429 or 503 with Retry-After pauses its whole endpoint until the latest end asked; other answers do not', () => {
  const batch = [
    item(1, 429, { retryAfterMs: 2_000, at: NOW }),
    item(2, 503, { retryAfterMs: 5_000, at: NOW - 100 }),
    item(3, 500, { retryAfterMs: 60_000, endpoint: 'ep_2' }),
    item(4, 429, { endpoint: 'ep_3' }),
    item(5, 429, { retryAfterMs: 9_000, endpoint: 'ep_4', endpointStatus: 'disabled' }),
    item(6, 200, { retryAfterMs: 9_000, endpoint: 'ep_5' }),
  ];
  assert.deepEqual(recordingPlan(batch, OWNER).pauses, [{ endpointId: 'ep_1', until: NOW - 100 + 5_000 }]);
});
