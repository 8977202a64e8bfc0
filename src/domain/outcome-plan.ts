import { type EndpointHealth, type EndpointStatus, nextEndpointHealth } from './endpoint-state.js';
import { idFrom } from './ids.js';
import {
  heldBy,
  pick,
  type QueueColumns,
  sameQueue,
  type WaitingAttempt,
  waitingOf,
  withoutHead,
} from './queue-slot.js';
import { endpointPauseMs, nextDelayAfterFailure } from './retry.js';
import type { AttemptStatus, AttemptTrigger, DeliveryStatus } from './states.js';

// What a batch of attempt outcomes does, decided without I/O. Recording runs in three steps, because one
// fact only the database can settle atomically comes between them: which attempt rows are new (the same
// outcome may be recorded twice).
//
// 1. recordingPlan: the attempts and the endpoints' pauses.
// 2. placeAttempts: from the deliveries read (locked), where each attempt is recorded. A delivery's first
//    attempt that succeeded under its worker's lease goes on the delivery row (its `first_*` columns, read
//    as attempt 1): the common delivery then writes no row besides its own. Every other attempt is a row
//    of `attempts`, written only if new.
// 3. outcomePlan: from what step 2 placed and wrote and the state read, whether each attempt was still its
//    worker's (the delivery's lease, src/domain/queue-slot.ts), each delivery's change (its counters,
//    status, queue columns and first attempt), the endpoints' health and the events that happened.
//
// Outcomes apply in the order given: a delivery with two outcomes in a batch (its head and an attempt
// whose lease ran out) sees the first one's consequences when the second is applied.

/** The claimed attempt an outcome belongs to: the head of its delivery's queue when claimed. */
export interface OutcomeTask {
  /** The attempt's key in the worker: its delivery and number (taskKey). */
  id: string;
  delivery_id: string;
  endpoint_id: string;
  trigger: AttemptTrigger;
  attempt_number: number;
  /** The lease end written by the claim: the attempt is still ours while the delivery's lease_until is this. */
  leaseUntil: number;
}

/** A claimed attempt's key: its delivery and its number (one delivery queues one attempt of a number). */
export function taskKey(deliveryId: string, attemptNumber: number): string {
  return `${deliveryId}.${attemptNumber}`;
}

/** What sending an attempt gave. */
export interface OutcomeResult {
  ok: boolean;
  /** The endpoint's transformation cancelled the attempt: nothing was sent, and the delivery ends (`ok`). */
  cancelled?: boolean;
  /** The request a transformation made, as JSON {method, url, body}; absent or null: the plain request. */
  request?: string | null;
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
  input: {
    task: OutcomeTask;
    /** `retryScheduleMs`: its own retry schedule (absent or null: OutcomeRules'). */
    endpoint: {
      id: string;
      status: EndpointStatus;
      fifo?: boolean | undefined;
      retryScheduleMs?: readonly number[] | null | undefined;
    } | null;
  };
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
  request: string | null;
}

/** What outcomePlan reads of a delivery (before this batch's changes): its counters and its queue. */
export interface DeliveryState extends QueueColumns {
  status: DeliveryStatus;
  schedule_step: number;
  attempt_seq: number;
  attempt_count: number;
  /** The id of the first attempt recorded on the delivery row; null: none is. */
  first_attempt_id: string | null;
}

/** The state a batch's consequences are decided from, read after recordingPlan's writes. */
export interface OutcomeState {
  /**
   * Ids of the attempts recorded now, as rows or on their delivery (an outcome recorded before is
   * recorded already).
   */
  written: ReadonlySet<string>;
  /** Ids of the attempts recorded now on their delivery row (placeAttempts): each delivery's change carries it. */
  inline: ReadonlySet<string>;
  /** The deliveries of the batch (one deleted meanwhile is missing). */
  deliveries: ReadonlyMap<string, DeliveryState>;
  /** The health of the endpoints with a failure in the batch (one deleted meanwhile is missing). */
  endpoints: ReadonlyMap<string, EndpointHealth>;
}

export interface OutcomeRules {
  /** The service's retry schedule (HERALD_RETRY_SCHEDULE), for endpoints without their own. */
  retryScheduleMs: readonly number[];
  disableAfterMs: number;
  /** When the batch is recorded: the `updated_at` of the deliveries whose attempts it counts. */
  now: number;
  random?: () => number;
}

/**
 * A delivery's change: `attemptsAdded` is added to its attempt_count; the other fields are set when
 * present (`queue`: every queue column, the lease cleared unless another worker's is kept; `first`: the
 * first attempt, written into the delivery's `first_*` columns).
 */
export interface DeliveryChange {
  id: string;
  attemptsAdded: number;
  status?: DeliveryStatus;
  schedule_step?: number;
  attempt_seq?: number;
  queue?: QueueColumns;
  first?: PlannedAttempt;
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
  /** Per item: whether its attempt was still ours (its attempt is recorded either way). */
  owned: boolean[];
  deliveries: DeliveryChange[];
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
export function announcedTrouble(
  delivery: Pick<DeliveryState, 'status' | 'attempt_count' | 'schedule_step'>,
  scheduleLength: number,
): boolean {
  if (delivery.status === 'success') return false;
  return (
    delivery.attempt_count >= FAILING_AFTER ||
    ((delivery.status === 'failed' || delivery.status === 'pending') && delivery.schedule_step >= scheduleLength)
  );
}

/**
 * An outcome's attempt row. The same outcome recorded twice has one id, so the second write finds its row;
 * the same attempt made by another worker, after the lease ran out, has its own.
 */
export function attemptRow(task: OutcomeTask, result: OutcomeResult, owner: string): PlannedAttempt {
  return {
    id: idFrom('attempt', result.at, `${task.id}|${owner}|${task.leaseUntil}`),
    delivery_id: task.delivery_id,
    endpoint_id: task.endpoint_id,
    attempt_number: task.attempt_number,
    trigger: task.trigger,
    status: result.cancelled ? 'cancelled' : result.ok ? 'success' : 'failed',
    response_status: result.responseStatus,
    response_body: result.responseBody,
    request_headers: result.requestHeaders ?? null,
    response_headers: result.responseHeaders ?? null,
    error: result.error,
    duration_ms: result.durationMs,
    created_at: result.at,
    request: result.request ?? null,
  };
}

/** Step 1: the attempt rows to write (if new) and the endpoints' pauses. */
export function recordingPlan(
  items: readonly OutcomeItem[],
  owner: string,
): { attempts: PlannedAttempt[]; pauses: EndpointPause[] } {
  return {
    attempts: items.map(({ input, result }) => attemptRow(input.task, result, owner)),
    pauses: endpointPauses(items),
  };
}

/** Where a batch's attempts are recorded (step 2). */
export interface AttemptPlacement {
  /** Attempts recorded on their delivery row. */
  inline: PlannedAttempt[];
  /** Attempts for `attempts`, to be written if new. */
  rows: PlannedAttempt[];
}

/**
 * Step 2: where each attempt goes. On its delivery row when it is the delivery's first (number 1,
 * scheduled), succeeded with nothing to note (`error` null: the row keeps no error), is still its worker's
 * and the row holds no first attempt yet (one per delivery: a second such outcome in the batch is a row).
 * An outcome recorded on the row, before or earlier in the batch (its id is the row's first attempt's),
 * goes nowhere: recording it again adds nothing. Any other attempt is a row.
 */
export function placeAttempts(
  items: readonly OutcomeItem[],
  attempts: readonly PlannedAttempt[],
  owner: string,
  deliveries: ReadonlyMap<string, DeliveryState>,
): AttemptPlacement {
  const placement: AttemptPlacement = { inline: [], rows: [] };
  /** The first attempt placed on each delivery's row in this batch. */
  const taken = new Map<string, string>();
  items.forEach((item, i) => {
    const attempt = attempts[i]!;
    const delivery = deliveries.get(attempt.delivery_id);
    if (delivery?.first_attempt_id === attempt.id || taken.get(attempt.delivery_id) === attempt.id) return;
    const first =
      attempt.status === 'success' &&
      attempt.error === null &&
      attempt.attempt_number === 1 &&
      attempt.trigger === 'scheduled' &&
      delivery !== undefined &&
      delivery.first_attempt_id === null &&
      !taken.has(attempt.delivery_id) &&
      ownedNow(item, delivery, owner);
    if (first) {
      taken.set(attempt.delivery_id, attempt.id);
      placement.inline.push(attempt);
    } else placement.rows.push(attempt);
  });
  return placement;
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

/** The deliveries a batch reads (and, on PostgreSQL, locks): every outcome's. */
export function deliveriesToRead(items: readonly OutcomeItem[]): string[] {
  return [...new Set(items.map(({ input }) => input.task.delivery_id))];
}

/** Whether the item's attempt is still its worker's: the head of its delivery, under the claim's lease. */
function ownedNow(item: OutcomeItem, delivery: DeliveryState | undefined, owner: string): boolean {
  const { task } = item.input;
  return delivery !== undefined && heldBy(delivery, owner, task.leaseUntil, task.attempt_number);
}

/**
 * The outcomes that move their endpoint's health: ours, of an endpoint that exists and is not disabled,
 * and made (a cancelled attempt sent nothing, so it says nothing of the receiver).
 */
function healthItems(items: readonly OutcomeItem[], owned: readonly boolean[]): OutcomeItem[] {
  return items.filter(
    ({ input, result }, i) =>
      owned[i] && !result.cancelled && input.endpoint !== null && input.endpoint.status !== 'disabled',
  );
}

/**
 * The endpoints whose health outcomePlan reads: those with a failure in the batch (read for all of them,
 * as whether an outcome was ours is known only once the deliveries are read).
 */
export function endpointsToRead(items: readonly OutcomeItem[]): string[] {
  return [
    ...new Set(
      items
        .filter(({ input, result }) => !result.ok && input.endpoint !== null && input.endpoint.status !== 'disabled')
        .map(({ input }) => input.endpoint!.id),
    ),
  ];
}

/** Step 2: what the batch's outcomes do, from what step 1 wrote and the state read after it. */
export function outcomePlan(
  items: readonly OutcomeItem[],
  owner: string,
  state: OutcomeState,
  rules: OutcomeRules,
): OutcomePlan {
  const { now } = rules;
  const attempts = items.map(({ input, result }) => attemptRow(input.task, result, owner));
  const deliveries = new Map([...state.deliveries].map(([id, d]) => [id, { ...d }]));
  const delivered = new Set(items.filter(({ result }) => result.ok).map(({ input }) => input.task.delivery_id));
  const changes = new Map<string, DeliveryChange>();
  const events: OutcomeEvent[] = [];
  const change = (id: string, fields: Omit<DeliveryChange, 'id' | 'attemptsAdded'>, added = 0) => {
    const current = changes.get(id) ?? { id, attemptsAdded: 0, updated_at: fields.updated_at };
    current.attemptsAdded += added;
    changes.set(id, Object.assign(current, fields));
  };
  const setQueue = (id: string, delivery: DeliveryState, queue: QueueColumns, at: number) => {
    Object.assign(delivery, queue);
    change(id, { queue, updated_at: at });
  };

  const owned: boolean[] = [];
  const exhausted = new Set<OutcomeItem>();
  items.forEach((item, i) => {
    const { input, result } = item;
    const { task } = input;
    const id = task.delivery_id;
    const delivery = deliveries.get(id);
    const ours = ownedNow(item, delivery, owner);
    owned.push(ours);
    if (!delivery) return; // removed meanwhile
    const fifo = input.endpoint?.fifo ?? false;
    const schedule = input.endpoint?.retryScheduleMs ?? rules.retryScheduleMs;
    const at = result.at;

    if (state.inline.has(attempts[i]!.id)) {
      delivery.first_attempt_id = attempts[i]!.id;
      change(id, { first: attempts[i]!, updated_at: now });
    }
    // Each attempt written now counts once.
    if (state.written.has(attempts[i]!.id)) {
      if (result.ok) {
        // Trouble announced before this batch, or by it: a failure here of a delivery delivered here
        // announced no delivery.failing (below), so its count is the one read, not the one counted here.
        const before = state.deliveries.get(id)!;
        if (announcedTrouble({ ...delivery, attempt_count: before.attempt_count }, schedule.length))
          events.push({ type: 'delivery.recovered', deliveryId: id, endpointId: task.endpoint_id, at });
      } else if (delivery.status !== 'success' && !delivered.has(id) && delivery.attempt_count + 1 === FAILING_AFTER) {
        // Not delivered, here or before: all its attempts failed, and they are as many as it counts.
        events.push({ type: 'delivery.failing', deliveryId: id, endpointId: task.endpoint_id, at });
      }
      delivery.attempt_count += 1;
      change(id, { updated_at: now }, 1);
    }

    // A 2xx delivers, ours or not: the delivery's scheduled attempts go (manual ones were asked for).
    // Only what changes is written: the same 2xx recorded again changes nothing, updated_at included.
    if (result.ok) {
      if (delivery.status !== 'success') {
        delivery.status = 'success';
        change(id, { status: 'success', updated_at: now });
      }
      const headGoes = ours || delivery.next_trigger === 'scheduled';
      if (headGoes || delivery.queued_after !== null) {
        const waiting = waitingOf(delivery);
        const queue = headGoes
          ? withoutHead(waiting, now, { dropScheduled: true, fifo })
          : { ...pick(delivery), queued_after: keepManual(waiting) };
        if (!sameQueue(queue, pick(delivery))) setQueue(id, delivery, queue, now);
      }
      return;
    }
    if (!ours) return; // another worker's attempt now, or recorded before: counted, nothing more
    const waiting = waitingOf(delivery);
    // Already delivered by another attempt: a failure now only leaves the head.
    if (delivery.status === 'success') {
      setQueue(id, delivery, withoutHead(waiting, now, { fifo }), at);
      return;
    }
    const endpointDisabled = input.endpoint === null || input.endpoint.status === 'disabled';
    // Not `failed` while its endpoint is disabled: it waits, as the endpoint's other deliveries do.
    const stopped = endpointDisabled && input.endpoint ? 'disabled' : 'failed';
    if (task.trigger === 'scheduled') {
      const nextStep = delivery.schedule_step + 1;
      const delay = endpointDisabled
        ? null
        : nextDelayAfterFailure(schedule, nextStep, result.retryAfterMs, rules.random);
      if (delay === null) {
        Object.assign(delivery, { status: stopped, schedule_step: nextStep });
        change(id, { status: stopped, schedule_step: nextStep, updated_at: at });
        setQueue(id, delivery, withoutHead(waiting, now, { fifo }), at);
        if (!endpointDisabled) {
          exhausted.add(item);
          events.push({ type: 'delivery.exhausted', deliveryId: id, endpointId: task.endpoint_id, at });
        }
        return;
      }
      const attemptSeq = delivery.attempt_seq + 1;
      const next: WaitingAttempt = { number: attemptSeq, trigger: 'scheduled', runAt: at + delay };
      Object.assign(delivery, { status: 'pending', schedule_step: nextStep, attempt_seq: attemptSeq });
      change(id, { status: 'pending', schedule_step: nextStep, attempt_seq: attemptSeq, updated_at: at });
      setQueue(id, delivery, withoutHead([...waiting, next], now, { fifo }), at);
      return;
    }
    // A failed manual attempt leaves a running schedule alone; otherwise the delivery, never delivered,
    // is now `failed` (or `disabled` while its endpoint is).
    if (waiting.length === 0) {
      delivery.status = stopped;
      change(id, { status: stopped, updated_at: at });
    }
    setQueue(id, delivery, withoutHead(waiting, now, { fifo }), at);
  });

  const { healthy, health } = endpointChanges(items, owned, state, exhausted, rules.disableAfterMs, events);
  return { owned, deliveries: [...changes.values()], healthy, health, events };
}

/** The manual attempts among `waiting`, as queued_after holds them. */
function keepManual(waiting: readonly WaitingAttempt[]): string | null {
  const manual = waiting.filter((w) => w.trigger === 'manual');
  return manual.length === 0 ? null : JSON.stringify(manual);
}

/**
 * Endpoint health after a batch. An endpoint whose outcomes here are all successes ends `active` with no
 * failure streak, whatever it was (unless disabled, which an outcome never undoes); the others have their
 * outcomes applied in order (nextEndpointHealth) to the health read, and are written if it changed.
 */
function endpointChanges(
  items: readonly OutcomeItem[],
  owned: readonly boolean[],
  state: OutcomeState,
  exhausted: ReadonlySet<OutcomeItem>,
  disableAfterMs: number,
  events: OutcomeEvent[],
): Pick<OutcomePlan, 'healthy' | 'health'> {
  const moving = healthItems(items, owned);
  const failed = new Set(moving.filter(({ result }) => !result.ok).map(({ input }) => input.endpoint!.id));
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
