import { newId } from '../../domain/ids.js';
import {
  attemptRow,
  type DeliveryState,
  endpointPauses,
  endpointsToRead,
  outcomePlan,
} from '../../domain/outcome-plan.js';
import { deliveredOf } from './statements.js';
import { eventCauses } from '../../domain/operational.js';
import type { EndpointHealth } from '../../domain/endpoint-state.js';
import type { QueuePolicy } from './types.js';
import type { Recorded } from './driver.js';
import type { CompleteParams, DeliveryWrite } from './postgres-statements.js';

// A batch of outcomes planned from what its claims read, for the one-statement write (postgres-statements.ts,
// COMPLETE): the planner decides as if every attempt were new and every task still ours, from the state
// each claim read; the statement writes the plan only if all of that still holds. Null when the batch
// cannot be planned so: an item without a claimed state, two items that read one delivery or endpoint
// differently. A plan that disables an endpoint stops the endpoint's queued attempts in the same statement:
// the statement sees the rows as they were before it, so the plan is shaped here into what the
// transaction's order of writes leaves (its next attempts of that endpoint are not queued, its holds of
// that endpoint are not written, and its pending deliveries of that endpoint end `disabled` with the
// endpoint's change time). The plan's events go with it, as JSON, for the queue to raise once the
// statement committed.

export function fastPlan(
  items: readonly Recorded[],
  owner: string,
  policy: QueuePolicy,
  now: number,
): CompleteParams | null {
  const deliveries = new Map<string, DeliveryState & { tasks: number }>();
  const endpoints = new Map<string, EndpointHealth>();
  const inBatch = new Map<string, number>();
  for (const { input } of items) {
    const state = input.claimedState;
    if (!state) return null;
    const id = input.task.delivery_id;
    const seen = deliveries.get(id);
    if (seen && !sameDelivery(seen, state.delivery)) return null;
    deliveries.set(id, state.delivery);
    inBatch.set(id, (inBatch.get(id) ?? 0) + 1);
    if (input.endpoint && state.endpoint) {
      const known = endpoints.get(input.endpoint.id);
      if (known && !sameHealth(known, state.endpoint)) return null;
      endpoints.set(input.endpoint.id, state.endpoint);
    }
  }
  const attempts = items.map(({ input, result }) => attemptRow(input.task, result, owner));
  const owned = new Set(items.map(({ input }) => input.task.id));
  const queued = new Set([...deliveries].filter(([id, d]) => d.tasks > inBatch.get(id)!).map(([id]) => id));
  const planned = new Map(endpointsToRead(items, owned).map((id) => [id, endpoints.get(id)!]));
  const plan = outcomePlan(
    items,
    owner,
    {
      written: new Set(attempts.map((a) => a.id)),
      owned,
      deliveries,
      queued,
      endpoints: planned,
    },
    {
      retryScheduleMs: policy.retryScheduleMs,
      disableAfterMs: policy.disableAfterMs,
      now,
      taskId: (at) => newId('task', at),
    },
  );
  const stops = new Map(plan.health.filter((h) => h.health.status === 'disabled').map((h) => [h.id, h.at]));
  const endpointOf = new Map(items.map(({ input }) => [input.task.delivery_id, input.task.endpoint_id]));
  const writes: DeliveryWrite[] = plan.deliveries.map((change) => {
    const before = deliveries.get(change.id)!;
    const status = change.status ?? before.status;
    const stoppedAt = stops.get(endpointOf.get(change.id)!);
    const stopped = stoppedAt !== undefined && status === 'pending';
    return {
      id: change.id,
      expect: before,
      added: change.attemptsAdded,
      status: stopped ? 'disabled' : status,
      schedule_step: change.schedule_step ?? before.schedule_step,
      attempt_seq: change.attempt_seq ?? before.attempt_seq,
      updated_at: stopped ? stoppedAt : change.updated_at,
    };
  });
  return {
    owner,
    now,
    attempts,
    tasks: items.map(({ input }) => input.task),
    delivered: deliveredOf(
      items.map(({ input }) => input.task),
      new Set(items.filter(({ result }) => result.ok).map(({ input }) => input.task.delivery_id)),
    ),
    deliveries: writes,
    holds: endpointPauses(items).filter((hold) => !stops.has(hold.endpointId)),
    queue: plan.queue.filter((task) => !stops.has(task.endpoint_id)),
    stops: [...stops].map(([id, at]) => ({ endpointId: id, at })),
    health: [...planned.keys()].map((id) => {
      const expect = endpoints.get(id)!;
      const change = plan.health.find((h) => h.id === id);
      const after = change?.health ?? expect;
      return {
        id,
        expect,
        changed: change !== undefined,
        status: after.status,
        failingSince: after.failingSince,
        exhaustedAt: after.exhaustedAt,
        at: change?.at ?? now,
      };
    }),
    healthy: plan.healthy,
    events: eventCauses(plan.events, attempts).map((caused) => ({
      id: newId('outcomeEvent', now),
      body: JSON.stringify(caused),
      created_at: now,
    })),
  };
}

const sameDelivery = (a: DeliveryState & { tasks: number }, b: DeliveryState & { tasks: number }) =>
  a.status === b.status &&
  a.attempt_count === b.attempt_count &&
  a.schedule_step === b.schedule_step &&
  a.attempt_seq === b.attempt_seq &&
  a.tasks === b.tasks;

const sameHealth = (a: EndpointHealth, b: EndpointHealth) =>
  a.status === b.status && a.failingSince === b.failingSince && a.exhaustedAt === b.exhaustedAt;
