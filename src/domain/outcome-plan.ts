import { type EndpointHealth, type EndpointStatus, nextEndpointHealth } from './endpoint-state.js';
import { idFrom } from './ids.js';
import { endpointPauseMs, nextDelayAfterFailure } from './retry.js';
import type { AttemptStatus, AttemptTrigger, DeliveryStatus } from './states.js';

// What a batch of attempt outcomes does, decided without I/O. Recording runs in two steps, because two
// facts only the database can settle atomically come between them: which attempt rows are new (the same
// outcome may be recorded twice) and which tasks were still ours (another worker may hold them since).
//
// 1. recordingPlan: the attempt rows to write (new ones only are kept) and the tasks to take (delete):
//    ours, by owner and lease end, and the scheduled attempts left to deliveries a 2xx delivered.
// 2. outcomePlan: from what step 1 wrote and took, and the state read after it, each delivery's change,
//    the next scheduled attempts to queue, the endpoints' health and the events that happened.
//
// Outcomes apply in the order given: a delivery with two outcomes in a batch (a scheduled and a manual
// attempt) sees the first one's consequences when the second is applied.

/** The claimed task an outcome belongs to. */
export interface OutcomeTask {
  id: string;
  delivery_id: string;
  endpoint_id: string;
  trigger: AttemptTrigger;
  attempt_number: number;
  /** The lease end written by the claim: the task is still ours while its run_at is this. */
  leaseUntil: number;
}

/** What sending an attempt gave. */
export interface OutcomeResult {
  ok: boolean;
  responseStatus: number | null;
  /** The headers sent, secrets redacted, as a header block (src/domain/headers.ts); absent or null: none sent. */
  requestHeaders?: string | null;
  /** The answer's headers as a header block; absent or null: no answer. */
  responseHeaders?: string | null;
  responseBody: string | null;
  error: string | null;
  durationMs: number;
  /** Delay the receiver asked for with Retry-After, already bounded. */
  retryAfterMs: number | null;
  /** When the attempt finished. */
  at: number;
}

/** One attempt's outcome, with its endpoint as the claim saw it (null: deleted). */
export interface OutcomeItem {
  input: { task: OutcomeTask; endpoint: { id: string; status: EndpointStatus } | null };
  result: OutcomeResult;
}

/** A row of `attempts`. */
export interface PlannedAttempt {
  id: string;
  delivery_id: string;
  endpoint_id: string;
  attempt_number: number;
  trigger: AttemptTrigger;
  status: AttemptStatus;
  response_status: number | null;
  response_body: string | null;
  request_headers: string | null;
  response_headers: string | null;
  error: string | null;
  duration_ms: number;
  created_at: number;
}

/** A row of `delivery_tasks`: a delivery's next scheduled attempt. */
export interface PlannedTask {
  id: string;
  delivery_id: string;
  endpoint_id: string;
  trigger: 'scheduled';
  attempt_number: number;
  run_at: number;
  lease_owner: null;
}

/** The tasks an outcome batch deletes: `tasks` while `owner` holds them, and the scheduled ones of `delivered`. */
export interface TaskTake {
  owner: string;
  tasks: OutcomeTask[];
  /** Deliveries a 2xx delivered: their scheduled attempts go too (manual ones were asked for). */
  delivered: ReadonlySet<string>;
}

/** What outcomePlan reads of a delivery (before this batch's changes). */
export interface DeliveryState {
  status: DeliveryStatus;
  schedule_step: number;
  attempt_seq: number;
  attempt_count: number;
}

/** The state a batch's consequences are decided from, read after recordingPlan's writes. */
export interface OutcomeState {
  /** Ids of the attempt rows written now (an outcome recorded before has its row already). */
  written: ReadonlySet<string>;
  /** Ids of our tasks the take deleted: the outcomes whose task was still ours. */
  owned: ReadonlySet<string>;
  /** The deliveries of deliveriesToRead (one deleted meanwhile is missing). */
  deliveries: ReadonlyMap<string, DeliveryState>;
  /** The deliveries with a task left after the take (an attempt still queued or under way). */
  queued: ReadonlySet<string>;
  /** The health of endpointsToRead (one deleted meanwhile is missing). */
  endpoints: ReadonlyMap<string, EndpointHealth>;
}

export interface OutcomeRules {
  retryScheduleMs: number[];
  disableAfterMs: number;
  /** When the batch is recorded: the `updated_at` of the deliveries whose attempts it counts. */
  now: number;
  /** A new task id for a next attempt queued at `at`. */
  taskId: (at: number) => string;
  random?: () => number;
}

/** A delivery's change: `attemptsAdded` is added to its attempt_count; the other fields are set when present. */
export interface DeliveryChange {
  id: string;
  attemptsAdded: number;
  status?: DeliveryStatus;
  schedule_step?: number;
  attempt_seq?: number;
  updated_at: number;
}

export type OutcomeEvent =
  /** A delivery's last scheduled attempt failed: no attempt is left (HERALD_RETRY_SCHEDULE). */
  | { type: 'delivery.exhausted'; deliveryId: string; endpointId: string; at: number }
  /** A delivery that had been failing or exhausted (announcedTrouble) succeeded. */
  | { type: 'delivery.recovered'; deliveryId: string; endpointId: string; at: number }
  /** A delivery never delivered failed its third attempt (every attempt it made failed). */
  | { type: 'delivery.failing'; deliveryId: string; endpointId: string; at: number }
  /** An outcome disabled an endpoint: a 410 (`gone`), or HERALD_DISABLE_AFTER of failures (`failures`). */
  | { type: 'endpoint.disabled'; endpointId: string; trigger: 'gone' | 'failures'; at: number };

export interface OutcomePlan {
  /** Per item: whether its task was still ours (its attempt is recorded either way). */
  owned: boolean[];
  deliveries: DeliveryChange[];
  /** Next scheduled attempts to queue. */
  queue: PlannedTask[];
  /**
   * Endpoints whose outcomes here are all successes: `active` with no failure streak, unless disabled.
   * Written conditionally on the row as it is then (no read), with `at` as updated_at.
   */
  healthy: { ids: string[]; at: number } | null;
  /** Health of endpoints with a failure here that changed, written unless an operator disabled the endpoint. */
  health: { id: string; health: EndpointHealth; at: number }[];
  events: OutcomeEvent[];
}

/** The delivery's failed attempts in a row after which it is `failing` (delivery.failing). */
export const FAILING_AFTER = 3;

/**
 * Whether a delivery, before this batch, had announced trouble: its FAILING_AFTER-th failed attempt
 * (delivery.failing: every attempt of a delivery not yet `success` failed, so it counts them) or its last
 * scheduled attempt failed (delivery.exhausted leaves it `failed` with the schedule used up, and it stays
 * so, or `pending` while a recovery's attempt waits). Only such a delivery's success is
 * delivery.recovered: a receiver told "failing" is told when it is over, and one told nothing is not told
 * of a recovery from a failure it never heard of.
 */
export function announcedTrouble(delivery: DeliveryState, scheduleLength: number): boolean {
  if (delivery.status === 'success') return false;
  return (
    delivery.attempt_count >= FAILING_AFTER ||
    ((delivery.status === 'failed' || delivery.status === 'pending') && delivery.schedule_step >= scheduleLength)
  );
}

/**
 * An outcome's attempt row. The same outcome recorded twice has one id, so the second write finds its row;
 * the same task's attempt made by another worker, after the lease ran out, has its own.
 */
export function attemptRow(task: OutcomeTask, result: OutcomeResult, owner: string): PlannedAttempt {
  return {
    id: idFrom('attempt', result.at, `${task.id}|${owner}`),
    delivery_id: task.delivery_id,
    endpoint_id: task.endpoint_id,
    attempt_number: task.attempt_number,
    trigger: task.trigger,
    status: result.ok ? 'success' : 'failed',
    response_status: result.responseStatus,
    response_body: result.responseBody,
    request_headers: result.requestHeaders ?? null,
    response_headers: result.responseHeaders ?? null,
    error: result.error,
    duration_ms: result.durationMs,
    created_at: result.at,
  };
}

/** Step 1: the attempt rows to write (if new) and the tasks to take. A 2xx delivers even when the task is no longer ours. */
export function recordingPlan(
  items: readonly OutcomeItem[],
  owner: string,
): { attempts: PlannedAttempt[]; take: TaskTake; pauses: EndpointPause[] } {
  return {
    attempts: items.map(({ input, result }) => attemptRow(input.task, result, owner)),
    take: {
      owner,
      tasks: items.map(({ input }) => input.task),
      delivered: new Set(items.filter(({ result }) => result.ok).map(({ input }) => input.task.delivery_id)),
    },
    pauses: endpointPauses(items),
  };
}

/**
 * An endpoint paused by an answer (endpointPauseMs): its queued attempts that no worker holds are not due
 * before `until`. Whichever outcome asked for the latest end counts.
 */
export interface EndpointPause {
  endpointId: string;
  until: number;
}

/** The pauses a batch's answers ask for, one per endpoint (a deleted or disabled endpoint has none). */
export function endpointPauses(items: readonly OutcomeItem[]): EndpointPause[] {
  const until = new Map<string, number>();
  for (const { input, result } of items) {
    const pause = endpointPauseMs(result.responseStatus, result.retryAfterMs);
    if (pause === null || !input.endpoint || input.endpoint.status === 'disabled') continue;
    const end = result.at + pause;
    until.set(input.endpoint.id, Math.max(end, until.get(input.endpoint.id) ?? end));
  }
  return [...until].map(([endpointId, end]) => ({ endpointId, until: end }));
}

/** The deliveries outcomePlan reads: those with an attempt written now, and those of our failed tasks. */
export function deliveriesToRead(
  items: readonly OutcomeItem[],
  attempts: readonly PlannedAttempt[],
  written: ReadonlySet<string>,
  owned: ReadonlySet<string>,
): string[] {
  const ids = new Set<string>();
  items.forEach(({ input, result }, i) => {
    if (written.has(attempts[i]!.id) || (!result.ok && owned.has(input.task.id))) ids.add(input.task.delivery_id);
  });
  return [...ids];
}

/** The outcomes that move their endpoint's health: ours, of an endpoint that exists and is not disabled. */
function healthItems(items: readonly OutcomeItem[], owned: ReadonlySet<string>): OutcomeItem[] {
  return items.filter(
    ({ input }) => owned.has(input.task.id) && input.endpoint !== null && input.endpoint.status !== 'disabled',
  );
}

/** The endpoints whose health outcomePlan reads: those with a failure among healthItems. */
export function endpointsToRead(items: readonly OutcomeItem[], owned: ReadonlySet<string>): string[] {
  return [
    ...new Set(
      healthItems(items, owned)
        .filter(({ result }) => !result.ok)
        .map(({ input }) => input.endpoint!.id),
    ),
  ];
}

/** Step 2: what the batch's outcomes do, from what step 1 wrote and took and the state read after it. */
export function outcomePlan(
  items: readonly OutcomeItem[],
  owner: string,
  state: OutcomeState,
  rules: OutcomeRules,
): OutcomePlan {
  const { now } = rules;
  const attempts = items.map(({ input, result }) => attemptRow(input.task, result, owner));
  const { delivered } = recordingPlan(items, owner).take;
  const deliveries = new Map([...state.deliveries].map(([id, d]) => [id, { ...d }]));
  const queued = new Set(state.queued);
  const changes = new Map<string, DeliveryChange>();
  const queue: PlannedTask[] = [];
  const events: OutcomeEvent[] = [];
  const change = (id: string, fields: Omit<DeliveryChange, 'id' | 'attemptsAdded'>) => {
    const current = changes.get(id) ?? { id, attemptsAdded: 0, updated_at: fields.updated_at };
    changes.set(id, Object.assign(current, fields));
  };

  // Each attempt written now counts once. A delivered delivery becomes `success`, whatever else happens
  // to it in the batch.
  const written = items.filter((_, i) => state.written.has(attempts[i]!.id));
  const counts = new Map<string, OutcomeItem[]>();
  for (const item of written) {
    const id = item.input.task.delivery_id;
    counts.set(id, [...(counts.get(id) ?? []), item]);
  }
  for (const [id, counted] of counts) {
    const delivery = deliveries.get(id);
    if (!delivery) continue; // removed meanwhile
    const endpointId = counted[0]!.input.task.endpoint_id;
    if (delivered.has(id)) {
      changes.set(id, {
        id,
        attemptsAdded: counted.length,
        status: 'success',
        updated_at: now,
      });
      const success = counted.find(({ result }) => result.ok)!;
      if (announcedTrouble(delivery, rules.retryScheduleMs.length))
        events.push({ type: 'delivery.recovered', deliveryId: id, endpointId, at: success.result.at });
      delivery.status = 'success';
    } else {
      changes.set(id, { id, attemptsAdded: counted.length, updated_at: now });
      // Not delivered, here or before: all its attempts failed, and they are as many as it counts.
      const third = counted[FAILING_AFTER - 1 - delivery.attempt_count];
      if (delivery.status !== 'success' && third)
        events.push({ type: 'delivery.failing', deliveryId: id, endpointId, at: third.result.at });
    }
  }

  // Our failures move their delivery on, one by one in order.
  const exhausted = new Set<OutcomeItem>();
  for (const item of items) {
    const { input, result } = item;
    const { task } = input;
    if (result.ok || !state.owned.has(task.id)) continue;
    const delivery = deliveries.get(task.delivery_id);
    if (!delivery) continue; // removed meanwhile
    const at = result.at;
    // Already delivered by another attempt: a failure now changes nothing.
    if (delivery.status === 'success') {
      change(task.delivery_id, { updated_at: at });
      continue;
    }
    const endpointDisabled = input.endpoint === null || input.endpoint.status === 'disabled';
    // Not `failed` while its endpoint is disabled: it waits, as the endpoint's other deliveries do.
    const stopped = endpointDisabled && input.endpoint ? 'disabled' : 'failed';
    if (task.trigger === 'scheduled') {
      const nextStep = delivery.schedule_step + 1;
      const delay = endpointDisabled
        ? null
        : nextDelayAfterFailure(rules.retryScheduleMs, nextStep, result.retryAfterMs, rules.random);
      if (delay === null) {
        delivery.status = stopped;
        delivery.schedule_step = nextStep;
        change(task.delivery_id, {
          status: stopped,
          schedule_step: nextStep,
          updated_at: at,
        });
        if (!endpointDisabled) {
          exhausted.add(item);
          events.push({ type: 'delivery.exhausted', deliveryId: task.delivery_id, endpointId: task.endpoint_id, at });
        }
        continue;
      }
      const runAt = at + delay;
      const attemptSeq = delivery.attempt_seq + 1;
      queue.push({
        id: rules.taskId(at),
        delivery_id: task.delivery_id,
        endpoint_id: task.endpoint_id,
        trigger: 'scheduled',
        attempt_number: attemptSeq,
        run_at: runAt,
        lease_owner: null,
      });
      queued.add(task.delivery_id);
      Object.assign(delivery, { status: 'pending', schedule_step: nextStep, attempt_seq: attemptSeq });
      change(task.delivery_id, {
        status: 'pending',
        schedule_step: nextStep,
        attempt_seq: attemptSeq,
        updated_at: at,
      });
      continue;
    }
    // A failed manual attempt leaves a running schedule alone; otherwise the delivery, never delivered,
    // is now `failed` (or `disabled` while its endpoint is).
    if (queued.has(task.delivery_id)) {
      change(task.delivery_id, { updated_at: at });
    } else {
      delivery.status = stopped;
      change(task.delivery_id, { status: stopped, updated_at: at });
    }
  }

  const { healthy, health } = endpointChanges(items, state, exhausted, rules.disableAfterMs, events);
  return {
    owned: items.map(({ input }) => state.owned.has(input.task.id)),
    deliveries: [...changes.values()],
    queue,
    healthy,
    health,
    events,
  };
}

/**
 * Endpoint health after a batch. An endpoint whose outcomes here are all successes ends `active` with no
 * failure streak, whatever it was (unless disabled, which an outcome never undoes); the others have their
 * outcomes applied in order (nextEndpointHealth) to the health read, and are written if it changed.
 */
function endpointChanges(
  items: readonly OutcomeItem[],
  state: OutcomeState,
  exhausted: ReadonlySet<OutcomeItem>,
  disableAfterMs: number,
  events: OutcomeEvent[],
): Pick<OutcomePlan, 'healthy' | 'health'> {
  const moving = healthItems(items, state.owned);
  const failed = new Set(endpointsToRead(items, state.owned));
  const successesOnly = moving.filter(({ input }) => !failed.has(input.endpoint!.id));
  const healthy =
    successesOnly.length === 0
      ? null
      : {
          ids: [...new Set(successesOnly.map(({ input }) => input.endpoint!.id))],
          at: Math.max(...successesOnly.map(({ result }) => result.at)),
        };
  const after = new Map(state.endpoints);
  let at = 0;
  for (const item of moving) {
    const id = item.input.endpoint!.id;
    const current = failed.has(id) ? after.get(id) : undefined;
    if (!current) continue; // all successes (above), or deleted meanwhile
    at = Math.max(at, item.result.at);
    const { ok, responseStatus } = item.result;
    const next = nextEndpointHealth(
      current,
      { ok, responseStatus, exhausted: exhausted.has(item), at: item.result.at },
      disableAfterMs,
    );
    if (next.status === 'disabled' && current.status !== 'disabled')
      events.push({
        type: 'endpoint.disabled',
        endpointId: id,
        trigger: responseStatus === 410 ? 'gone' : 'failures',
        at: item.result.at,
      });
    after.set(id, next);
  }
  const health: OutcomePlan['health'] = [];
  for (const [id, next] of after) {
    const was = state.endpoints.get(id)!;
    if (next.status !== was.status || next.failingSince !== was.failingSince || next.exhaustedAt !== was.exhaustedAt)
      health.push({ id, health: next, at });
  }
  return { healthy, health };
}
