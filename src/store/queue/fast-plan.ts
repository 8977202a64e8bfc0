import { newId } from '../../domain/ids.js';
import {
  attemptRow,
  type DeliveryState,
  endpointPauses,
  endpointsToRead,
  outcomePlan,
  placeAttempts,
} from '../../domain/outcome-plan.js';
import { EMPTY_QUEUE, hasQueued, pick, sameQueue } from '../../domain/queue-slot.js';
import { eventCauses } from '../../domain/operational.js';
import type { EndpointHealth } from '../../domain/endpoint-state.js';
import type { QueuePolicy, Recorded } from './types.js';
import type { CompleteParams, DeliveryWrite } from './postgres-statements.js';

// A batch of outcomes planned from what its claims read, for the one-statement write (postgres-statements.ts,
// COMPLETE): the planner decides as if every attempt were new, from the state each claim left; the
// statement writes the plan only if all of that still holds. Null when the batch cannot be planned so: an
// item without a claimed state, two items that read one delivery or endpoint differently. A plan that
// disables an endpoint stops the endpoint's queued attempts in the same statement: the statement sees the
// rows as they were before it, so the plan is shaped here into what the transaction's order of writes
// leaves (its holds of that endpoint are not written, and its deliveries of that endpoint end with an empty
// queue, `disabled` if pending, at the endpoint's change time). The plan's events go with it, as JSON, for
// the queue to raise once the statement committed.

export function fastPlan(
  items: readonly Recorded[],
  owner: string,
  policy: QueuePolicy,
  now: number,
): CompleteParams | null {
  const deliveries = new Map<string, DeliveryState>();
  const endpoints = new Map<string, EndpointHealth>();
  for (const { input } of items) {
    const state = input.claimedState;
    if (!state) return null;
    const id = input.task.delivery_id;
    const seen = deliveries.get(id);
    if (seen && !sameDelivery(seen, state.delivery)) return null;
    deliveries.set(id, state.delivery);
    if (input.endpoint && state.endpoint) {
      const known = endpoints.get(input.endpoint.id);
      if (known && !sameHealth(known, state.endpoint)) return null;
      endpoints.set(input.endpoint.id, state.endpoint);
    }
  }
  const attempts = items.map(({ input, result }) => attemptRow(input.task, result, owner));
  const read = endpointsToRead(items);
  if (read.some((id) => !endpoints.has(id))) return null;
  const placement = placeAttempts(items, attempts, owner, deliveries);
  const plan = outcomePlan(
    items,
    owner,
    {
      written: new Set(attempts.map((a) => a.id)),
      inline: new Set(placement.inline.map((a) => a.id)),
      deliveries,
      endpoints: new Map(read.map((id) => [id, endpoints.get(id)!])),
    },
    { retryScheduleMs: policy.retryScheduleMs, disableAfterMs: policy.disableAfterMs, now },
  );
  const stops = new Map(plan.health.filter((h) => h.health.status === 'disabled').map((h) => [h.id, h.at]));
  const endpointOf = new Map(items.map(({ input }) => [input.task.delivery_id, input.task.endpoint_id]));
  const changes = new Map(plan.deliveries.map((change) => [change.id, change]));
  const writes: DeliveryWrite[] = [...deliveries].map(([id, before]) => {
    const change = changes.get(id);
    const after = {
      status: change?.status ?? before.status,
      attempt_count: before.attempt_count + (change?.attemptsAdded ?? 0),
      schedule_step: change?.schedule_step ?? before.schedule_step,
      attempt_seq: change?.attempt_seq ?? before.attempt_seq,
      first_attempt_id: change?.first?.id ?? before.first_attempt_id,
      ...pick(change?.queue ?? before),
      updated_at: change?.updated_at ?? now,
    };
    const first = change?.first ?? null;
    const stoppedAt = stops.get(endpointOf.get(id)!);
    // As stopEndpoints stops them: only deliveries pending or with an attempt queued.
    const stopped = stoppedAt !== undefined && (after.status === 'pending' || hasQueued(after));
    if (!stopped) return { id, expect: before, after: pickState(after), first };
    return {
      id,
      expect: before,
      first,
      after: {
        ...pickState(after),
        ...EMPTY_QUEUE,
        status: after.status === 'pending' ? 'disabled' : after.status,
        updated_at: stoppedAt,
      },
    };
  });
  return {
    now,
    attempts: placement.rows,
    deliveries: writes,
    holds: endpointPauses(items).filter((hold) => !stops.has(hold.endpointId)),
    stops: [...stops].map(([id, at]) => ({ endpointId: id, at })),
    health: read.map((id) => {
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

/** The columns of a delivery the statement writes. */
function pickState(d: DeliveryState & { updated_at: number }): DeliveryState & { updated_at: number } {
  return {
    status: d.status,
    attempt_count: d.attempt_count,
    schedule_step: d.schedule_step,
    attempt_seq: d.attempt_seq,
    first_attempt_id: d.first_attempt_id,
    run_at: d.run_at,
    next_trigger: d.next_trigger,
    next_attempt: d.next_attempt,
    lease_owner: d.lease_owner,
    lease_until: d.lease_until,
    queued_after: d.queued_after,
    updated_at: d.updated_at,
  };
}

const sameDelivery = (a: DeliveryState, b: DeliveryState) =>
  a.status === b.status &&
  a.attempt_count === b.attempt_count &&
  a.schedule_step === b.schedule_step &&
  a.attempt_seq === b.attempt_seq &&
  a.first_attempt_id === b.first_attempt_id &&
  sameQueue(a, b);

const sameHealth = (a: EndpointHealth, b: EndpointHealth) =>
  a.status === b.status && a.failingSince === b.failingSince && a.exhaustedAt === b.exhaustedAt;
