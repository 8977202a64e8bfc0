import { isParked } from './fifo.js';
import type { AttemptTrigger, DeliveryStatus } from './states.js';

// A delivery's queue, kept on the delivery row itself (no row of its own): the attempt at its head, due
// at `run_at`, which a worker claims by writing the lease columns; and, rarely, attempts waiting behind
// the head, as JSON in `queued_after` (a manual retry asked while the head is under way or is itself a
// manual attempt, or a scheduled attempt a manual retry jumped ahead of). No index covers the lease
// columns, so a claim rewrites no index entry (a HOT update on PostgreSQL); only a change of the head's
// due time does.
//
// States of the head: none (`run_at` null: nothing queued), waiting (due at `run_at`; parked FIFO
// attempts wait at PARKED_AT), held (a worker's lease runs until `lease_until`). A held head whose lease
// ran out is waiting again: another worker may claim it.

/** The queue columns of a delivery row. */
export interface QueueColumns {
  /** When the head attempt is due; null: nothing queued. */
  run_at: number | null;
  next_trigger: AttemptTrigger | null;
  /** The head attempt's number. */
  next_attempt: number | null;
  lease_owner: string | null;
  lease_until: number | null;
  /** JSON array of WaitingAttempt, in order; null: none. */
  queued_after: string | null;
}

/** An attempt waiting behind the head: due at `runAt` once it is the head (null: as soon as it is). */
export interface WaitingAttempt {
  number: number;
  trigger: AttemptTrigger;
  runAt: number | null;
}

/** The queue columns of a delivery with nothing queued. */
export const EMPTY_QUEUE: QueueColumns = {
  run_at: null,
  next_trigger: null,
  next_attempt: null,
  lease_owner: null,
  lease_until: null,
  queued_after: null,
};

/** A head waiting at `runAt`, nothing behind it. */
export function queuedHead(number: number, trigger: AttemptTrigger, runAt: number): QueueColumns {
  return { ...EMPTY_QUEUE, run_at: runAt, next_trigger: trigger, next_attempt: number };
}

export function waitingOf(queue: QueueColumns): WaitingAttempt[] {
  return queue.queued_after === null ? [] : (JSON.parse(queue.queued_after) as WaitingAttempt[]);
}

/** Whether a worker holds the head at `now` (claimed, its lease not run out). */
export function isHeld(queue: QueueColumns, now: number): boolean {
  return queue.lease_owner !== null && queue.lease_until !== null && Number(queue.lease_until) > now;
}

/** Whether the head is `owner`'s under the lease that ends at `leaseUntil`, for attempt `number`. */
export function heldBy(queue: QueueColumns, owner: string, leaseUntil: number, number: number): boolean {
  return (
    queue.lease_owner === owner && Number(queue.lease_until) === leaseUntil && Number(queue.next_attempt) === number
  );
}

/** Whether any attempt is queued (the head, or one behind it). */
export function hasQueued(queue: QueueColumns): boolean {
  return queue.run_at !== null || queue.queued_after !== null;
}

/**
 * The queue once its head is gone: the waiting attempt due soonest becomes the head (a manual one is due
 * at `now`, and goes before any scheduled one, however overdue: a manual retry waits for no scheduled
 * attempt, and is numbered before it, withManual); `dropScheduled` leaves out the scheduled ones (the
 * delivery was delivered). A parked attempt is due at once when its endpoint is no longer FIFO.
 */
export function withoutHead(
  waiting: readonly WaitingAttempt[],
  now: number,
  { dropScheduled = false, fifo = true }: { dropScheduled?: boolean; fifo?: boolean } = {},
): QueueColumns {
  const kept = waiting.filter((w) => !(dropScheduled && w.trigger === 'scheduled'));
  if (kept.length === 0) return EMPTY_QUEUE;
  const due = (w: WaitingAttempt) => (w.runAt === null || (!fifo && isParked(w.runAt)) ? now : w.runAt);
  const rank = (w: WaitingAttempt) => (w.trigger === 'manual' ? Number.NEGATIVE_INFINITY : due(w));
  let next = 0;
  for (let i = 1; i < kept.length; i++) if (rank(kept[i]!) < rank(kept[next]!)) next = i;
  const head = kept[next]!;
  const rest = kept.filter((_, i) => i !== next);
  return {
    ...queuedHead(head.number, head.trigger, due(head)),
    queued_after: rest.length === 0 ? null : JSON.stringify(rest),
  };
}

/** The queue with `attempt` added: it becomes the head if none waits, or waits behind it. */
export function withAttempt(queue: QueueColumns, attempt: WaitingAttempt, now: number): QueueColumns {
  if (queue.run_at === null) return withoutHead([...waitingOf(queue), attempt], now);
  return { ...queue, queued_after: JSON.stringify([...waitingOf(queue), attempt]) };
}

/**
 * A manual attempt asked for (a retry, a recovery), numbered after every attempt made (`madeUpTo`, the
 * highest number recorded) or queued: the number of a queued attempt that was dropped (a 410, a disabled
 * or deleted endpoint) is handed out again. When
 * the head is a scheduled attempt no worker holds (waiting for its time, or parked), the manual one takes
 * its place and its number, and the scheduled one waits behind it, numbered next: a manual retry waits
 * for nothing, and does not use up the schedule. Otherwise the manual attempt waits behind the head; if
 * the scheduled attempt waits there too (behind a held or manual head), the manual one takes its number
 * the same way, as it goes before it (withoutHead): attempts are made in the order of their numbers.
 * A `failed` or `disabled` delivery is `pending` again.
 */
export function withManual(
  delivery: QueueColumns & { status: DeliveryStatus },
  now: number,
  madeUpTo: number,
): { queue: QueueColumns; number: number; attempt_seq: number; status: DeliveryStatus } {
  const queue = pick(delivery);
  const queued = [
    ...(queue.next_attempt === null ? [] : [queue.next_attempt]),
    ...waitingOf(queue).map((w) => w.number),
  ];
  const seq = Math.max(madeUpTo, ...queued) + 1;
  const status = delivery.status === 'failed' || delivery.status === 'disabled' ? 'pending' : delivery.status;
  if (queue.run_at !== null && queue.next_trigger === 'scheduled' && !isHeld(queue, now)) {
    const number = Number(queue.next_attempt);
    const scheduled: WaitingAttempt = { number: seq, trigger: 'scheduled', runAt: Number(queue.run_at) };
    const waiting = [scheduled, ...waitingOf(queue)];
    return {
      queue: { ...queuedHead(number, 'manual', now), queued_after: JSON.stringify(waiting) },
      number,
      attempt_seq: seq,
      status,
    };
  }
  const waiting = waitingOf(queue);
  const scheduled = waiting.findIndex((w) => w.trigger === 'scheduled');
  if (queue.run_at !== null && scheduled >= 0) {
    const number = waiting[scheduled]!.number;
    const renumbered = waiting.map((w, i) => (i === scheduled ? { ...w, number: seq } : w));
    const manual: WaitingAttempt = { number, trigger: 'manual', runAt: null };
    return {
      queue: { ...queue, queued_after: JSON.stringify([...renumbered, manual]) },
      number,
      attempt_seq: seq,
      status,
    };
  }
  return {
    queue: withAttempt(queue, { number: seq, trigger: 'manual', runAt: null }, now),
    number: seq,
    attempt_seq: seq,
    status,
  };
}

/** The queue columns of a row that has more. */
export function pick(row: QueueColumns): QueueColumns {
  return {
    run_at: row.run_at === null ? null : Number(row.run_at),
    next_trigger: row.next_trigger,
    next_attempt: row.next_attempt === null ? null : Number(row.next_attempt),
    lease_owner: row.lease_owner,
    lease_until: row.lease_until === null ? null : Number(row.lease_until),
    queued_after: row.queued_after,
  };
}

export function sameQueue(a: QueueColumns, b: QueueColumns): boolean {
  return (
    a.run_at === b.run_at &&
    a.next_trigger === b.next_trigger &&
    a.next_attempt === b.next_attempt &&
    a.lease_owner === b.lease_owner &&
    a.lease_until === b.lease_until &&
    a.queued_after === b.queued_after
  );
}
