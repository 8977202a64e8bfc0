import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AttemptTrigger } from '../../../src/domain/states.js';
import type { EndpointHealth } from '../../../src/domain/endpoint-state.js';
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
  recordingPlan,
} from '../../../src/domain/outcome-plan.js';

// The outcome planner, case by case: what a batch of attempt outcomes does to deliveries, the queue and
// endpoints, and the events it reports. The planner reads nothing; each case hands it the state.

const OWNER = 'wrk_plan';
const NOW = 1_000_000;
const HOUR = 3_600_000;
const RULES = {
  retryScheduleMs: [0, HOUR, 2 * HOUR],
  disableAfterMs: 24 * HOUR,
  now: NOW,
  taskId: (at: number) => `tsk_next_${at}`,
  // The middle of the jitter: each delay is the schedule's own.
  random: () => 0.5,
};

function item(
  n: number,
  status: number,
  { trigger = 'scheduled', at = NOW - 10, endpoint = 'ep_1', endpointStatus = 'active', retryAfterMs = null } = {} as {
    trigger?: AttemptTrigger;
    at?: number;
    endpoint?: string | null;
    endpointStatus?: 'active' | 'failing' | 'disabled';
    retryAfterMs?: number | null;
  },
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
        id: `tsk_${n}_${trigger}`,
        delivery_id: `dlv_${n}`,
        endpoint_id: endpoint ?? 'ep_gone',
        trigger,
        attempt_number: 1,
        leaseUntil: NOW + 60_000,
      },
      endpoint: endpoint === null ? null : { id: endpoint, status: endpointStatus },
    },
    result,
  };
}

const fresh = (over: Partial<DeliveryState> = {}): DeliveryState => ({
  status: 'pending',
  schedule_step: 0,
  attempt_seq: 1,
  attempt_count: 0,
  ...over,
});

/** The state after a first recording of `items`: every attempt new, every task ours, unless told otherwise. */
function state(items: OutcomeItem[], over: Partial<OutcomeState> = {}): OutcomeState {
  const { attempts } = recordingPlan(items, OWNER);
  return {
    written: new Set(attempts.map((a) => a.id)),
    owned: new Set(items.map(({ input }) => input.task.id)),
    deliveries: new Map(items.map(({ input }) => [input.task.delivery_id, fresh()])),
    queued: new Set(),
    endpoints: new Map(),
    ...over,
  };
}

const healthy: EndpointHealth = { status: 'active', failingSince: null, exhaustedAt: null };

test('recordingPlan: one attempt row per outcome, ours and the delivered deliveries scheduled tasks taken', () => {
  const items = [item(1, 200), item(2, 500)];
  const { attempts, take } = recordingPlan(items, OWNER);
  assert.deepEqual(
    attempts.map((a) => [a.delivery_id, a.status, a.response_status]),
    [
      ['dlv_1', 'success', 200],
      ['dlv_2', 'failed', 500],
    ],
  );
  assert.equal(attempts[0]!.id, attemptRow(items[0]!.input.task, items[0]!.result, OWNER).id);
  assert.notEqual(attempts[0]!.id, attemptRow(items[0]!.input.task, items[0]!.result, 'wrk_other').id);
  assert.deepEqual([...take.delivered], ['dlv_1']);
  assert.equal(take.tasks.length, 2);
});

test('a 2xx: the delivery is a success, also with a manual attempt still queued, its endpoint healthy', () => {
  const items = [item(1, 200), item(2, 204, { at: NOW - 5 })];
  const plan = outcomePlan(items, OWNER, state(items, { queued: new Set(['dlv_2']) }), RULES);
  assert.deepEqual(plan.owned, [true, true]);
  assert.deepEqual(plan.deliveries, [
    { id: 'dlv_1', attemptsAdded: 1, status: 'success', updated_at: NOW },
    { id: 'dlv_2', attemptsAdded: 1, status: 'success', updated_at: NOW },
  ]);
  assert.deepEqual(plan.queue, []);
  assert.deepEqual(plan.healthy, { ids: ['ep_1'], at: NOW - 5 });
  assert.deepEqual(plan.health, []);
  assert.deepEqual(plan.events, [], 'a first attempt that succeeds recovers nothing');
});

test('a 2xx of a delivery that was failing or exhausted is a recovery; after fewer failures or a success it is not', () => {
  const items = [item(1, 200), item(2, 200), item(3, 200), item(4, 200, { trigger: 'manual' })];
  const deliveries = new Map([
    // Three failed attempts: delivery.failing was sent.
    ['dlv_1', fresh({ attempt_count: 3, schedule_step: 3 })],
    ['dlv_2', fresh({ status: 'success', attempt_count: 3 })],
    // Two failures: nothing was sent, so nothing recovers.
    ['dlv_3', fresh({ attempt_count: 2, schedule_step: 2 })],
    // Its last scheduled attempt failed (delivery.exhausted), on a schedule of three.
    ['dlv_4', fresh({ status: 'failed', attempt_count: 3, schedule_step: 3 })],
  ]);
  const plan = outcomePlan(items, OWNER, state(items, { deliveries }), RULES);
  assert.deepEqual(plan.events, [
    { type: 'delivery.recovered', deliveryId: 'dlv_1', endpointId: 'ep_1', at: NOW - 10 },
    { type: 'delivery.recovered', deliveryId: 'dlv_4', endpointId: 'ep_1', at: NOW - 10 },
  ]);
  const short = { ...RULES, retryScheduleMs: [0] };
  const exhaustedOnce = new Map([['dlv_1', fresh({ status: 'failed', attempt_count: 1, schedule_step: 1 })]]);
  const one = [item(1, 200, { trigger: 'manual' })];
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
  assert.deepEqual(
    plan.queue.map((t) => [t.delivery_id, t.attempt_number, t.run_at, t.trigger, t.lease_owner]),
    [
      ['dlv_1', 2, NOW + HOUR, 'scheduled', null],
      ['dlv_2', 2, NOW + 5 * HOUR, 'scheduled', null],
    ],
  );
  assert.deepEqual(plan.deliveries[0], {
    id: 'dlv_1',
    attemptsAdded: 1,
    updated_at: NOW,
    status: 'pending',
    schedule_step: 1,
    attempt_seq: 2,
  });
  assert.deepEqual(plan.health, [
    { id: 'ep_1', health: { status: 'failing', failingSince: NOW, exhaustedAt: null }, at: NOW },
  ]);
  assert.equal(plan.healthy, null);
  assert.deepEqual(plan.events, []);
});

test('the last scheduled attempt failing exhausts the delivery and, past HERALD_DISABLE_AFTER, disables the endpoint', () => {
  const items = [item(1, 500, { at: NOW })];
  const failing: EndpointHealth = { status: 'failing', failingSince: NOW - 25 * HOUR, exhaustedAt: null };
  const plan = outcomePlan(
    items,
    OWNER,
    state(items, {
      deliveries: new Map([['dlv_1', fresh({ schedule_step: 2, attempt_seq: 3, attempt_count: 2 })]]),
      endpoints: new Map([['ep_1', failing]]),
    }),
    RULES,
  );
  assert.deepEqual(plan.queue, []);
  assert.deepEqual(plan.deliveries, [
    { id: 'dlv_1', attemptsAdded: 1, updated_at: NOW, status: 'failed', schedule_step: 3 },
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

test('a 410 disables the endpoint (gone); its delivery keeps its schedule for stopDeliveries to end', () => {
  const items = [item(1, 410, { at: NOW })];
  const plan = outcomePlan(items, OWNER, state(items, { endpoints: new Map([['ep_1', healthy]]) }), RULES);
  assert.equal(plan.health[0]!.health.status, 'disabled');
  assert.deepEqual(plan.events, [{ type: 'endpoint.disabled', endpointId: 'ep_1', trigger: 'gone', at: NOW }]);
});

test('a delivery never delivered is failing at its third failed attempt, once', () => {
  const after = (count: number) => {
    const items = [item(1, 500)];
    const deliveries = new Map([['dlv_1', fresh({ attempt_count: count, schedule_step: count })]]);
    return outcomePlan(items, OWNER, state(items, { deliveries, endpoints: new Map([['ep_1', healthy]]) }), {
      ...RULES,
      retryScheduleMs: [0, 0, 0, 0, 0],
    }).events.map((e) => e.type);
  };
  assert.deepEqual(after(1), []);
  assert.deepEqual(after(2), ['delivery.failing']);
  assert.deepEqual(after(3), []);
  // Two failures in one batch (a scheduled and a manual attempt) that take it from 1 to 3: the second one.
  const items = [item(1, 500, { at: NOW - 2 }), item(1, 500, { trigger: 'manual', at: NOW - 1 })];
  const deliveries = new Map([['dlv_1', fresh({ attempt_count: 1, schedule_step: 1 })]]);
  const plan = outcomePlan(items, OWNER, state(items, { deliveries }), RULES);
  assert.deepEqual(
    plan.events.filter((e) => e.type === 'delivery.failing'),
    [{ type: 'delivery.failing', deliveryId: 'dlv_1', endpointId: 'ep_1', at: NOW - 1 }],
  );
});

test('a task another owner holds: its attempt counts, but it moves neither the delivery nor the endpoint', () => {
  const items = [item(1, 500)];
  const plan = outcomePlan(items, OWNER, state(items, { owned: new Set() }), RULES);
  assert.deepEqual(plan.owned, [false]);
  assert.deepEqual(plan.deliveries, [{ id: 'dlv_1', attemptsAdded: 1, updated_at: NOW }]);
  assert.deepEqual(plan.queue, []);
  assert.equal(plan.healthy, null);
  assert.deepEqual(plan.health, []);
  assert.deepEqual(endpointsToRead(items, new Set()), []);
});

test('an outcome recorded before counts nothing, and its delivery is not read', () => {
  const items = [item(1, 200)];
  const { attempts } = recordingPlan(items, OWNER);
  assert.deepEqual(deliveriesToRead(items, attempts, new Set(), new Set()), []);
  const plan = outcomePlan(items, OWNER, state(items, { written: new Set(), owned: new Set() }), RULES);
  assert.deepEqual(plan.deliveries, []);
  assert.deepEqual(plan.owned, [false]);
});

test('a failed manual attempt leaves a running schedule alone; with none left the delivery is failed', () => {
  const items = [item(1, 500, { trigger: 'manual', at: NOW })];
  const running = outcomePlan(items, OWNER, state(items, { queued: new Set(['dlv_1']) }), RULES);
  assert.deepEqual(running.deliveries, [{ id: 'dlv_1', attemptsAdded: 1, updated_at: NOW }]);
  assert.deepEqual(running.queue, []);
  const done = outcomePlan(items, OWNER, state(items), RULES);
  assert.deepEqual(done.deliveries, [{ id: 'dlv_1', attemptsAdded: 1, updated_at: NOW, status: 'failed' }]);
});

test('two failures of one delivery in a batch: the manual one sees the retry the scheduled one queued', () => {
  const items = [item(1, 500, { at: NOW - 2 }), item(1, 500, { trigger: 'manual', at: NOW - 1 })];
  const plan = outcomePlan(items, OWNER, state(items), RULES);
  assert.equal(plan.queue.length, 1);
  assert.deepEqual(plan.deliveries, [
    {
      id: 'dlv_1',
      attemptsAdded: 2,
      updated_at: NOW - 1,
      status: 'pending',
      schedule_step: 1,
      attempt_seq: 2,
    },
  ]);
});

test('a failure of a delivery delivered in the same batch changes nothing but its next attempt', () => {
  const items = [item(1, 200, { trigger: 'manual', at: NOW - 2 }), item(1, 500, { at: NOW - 1 })];
  const plan = outcomePlan(items, OWNER, state(items), RULES);
  assert.deepEqual(plan.queue, []);
  assert.deepEqual(plan.deliveries, [{ id: 'dlv_1', attemptsAdded: 2, status: 'success', updated_at: NOW - 1 }]);
  assert.deepEqual(plan.events, [], 'a first failure announced nothing, so its success recovers nothing');
});

test('with its endpoint disabled or deleted, a failure stops the delivery without exhausting it', () => {
  const disabled = [item(1, 500, { endpointStatus: 'disabled' })];
  const plan = outcomePlan(disabled, OWNER, state(disabled), RULES);
  assert.equal(plan.deliveries[0]!.status, 'disabled');
  assert.deepEqual(plan.queue, []);
  assert.deepEqual(plan.events, []);
  assert.deepEqual(endpointsToRead(disabled, new Set([disabled[0]!.input.task.id])), []);
  const deleted = [item(2, 500, { endpoint: null })];
  assert.equal(outcomePlan(deleted, OWNER, state(deleted), RULES).deliveries[0]!.status, 'failed');
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
  const owned = new Set(items.map(({ input }) => input.task.id));
  assert.deepEqual(endpointsToRead(items, owned), ['ep_b']);
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
