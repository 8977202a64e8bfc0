import type { OutcomeEvent, PlannedAttempt } from './outcome-plan.js';

// Operational webhooks: Herald's own events about an environment's endpoints and deliveries, sent to the
// environment's operational endpoints as ordinary messages (signed, retried, readable as deliveries). The
// names are Svix's, so receivers written for Svix's operational webhooks fit.

/**
 * Operational endpoints an environment may have. Each occurrence writes a delivery per subscribed one in
 * the transaction that raises it (an outcome batch, an application's delete), so their number bounds
 * what one tenant's event adds to transactions that other tenants' outcomes share.
 */
export const MAX_OPERATIONAL_ENDPOINTS = 10;

export const OPERATIONAL_EVENT_TYPES = [
  'endpoint.created',
  'endpoint.updated',
  'endpoint.deleted',
  'endpoint.disabled',
  'endpoint.circuit_opened',
  'endpoint.circuit_closed',
  'message.attempt.failing',
  'message.attempt.exhausted',
  'message.attempt.recovered',
] as const;

export type OperationalEventType = (typeof OPERATIONAL_EVENT_TYPES)[number];

/** Why an endpoint was disabled: a 410 answer, HERALD_DISABLE_AFTER of failures, or an update. */
export type DisableTrigger = 'gone' | 'failures' | 'manual';

/** The attempt an event is about, as the event's body shows it. */
export interface LastAttempt {
  attempt_number: number;
  response_status: number | null;
  error: string | null;
  /** ISO 8601. */
  created_at: string;
}

/** `data` of an operational event's body. */
export interface OperationalData {
  app_id: string;
  app_uid: string | null;
  endpoint_id: string;
  /** `http`, or the destination's type. */
  endpoint_type: string;
  message_id?: string;
  delivery_id?: string;
  trigger?: DisableTrigger;
  last_attempt?: LastAttempt;
  /** A circuit's change: the window's share of failures that opened it (or the probe's, 0 or 1), and until when it is open. */
  failure_ratio?: number;
  open_until?: string | null;
}

/** One occurrence to raise, in the environment of what it describes. */
export interface Occurrence {
  orgId: string;
  livemode: number;
  type: OperationalEventType;
  /** When it happened: the body's `timestamp` and the message's created_at. */
  at: number;
  data: OperationalData;
}

/** The application and endpoint an occurrence is about. */
export interface Subject {
  orgId: string;
  livemode: number;
  appId: string;
  appUid: string | null;
  endpointId: string;
  /** `http`, or the kind of destination (src/domain/destinations.ts): every event about it says which. */
  endpointType: string;
}

/** The public name of each of the outcome planner's events. */
const PUBLIC_NAMES: Record<OutcomeEvent['type'], OperationalEventType> = {
  'delivery.failing': 'message.attempt.failing',
  'delivery.exhausted': 'message.attempt.exhausted',
  'delivery.recovered': 'message.attempt.recovered',
  'endpoint.disabled': 'endpoint.disabled',
};

export function lastAttemptOf(attempt: PlannedAttempt): LastAttempt {
  return {
    attempt_number: attempt.attempt_number,
    response_status: attempt.response_status,
    error: attempt.error,
    created_at: new Date(attempt.created_at).toISOString(),
  };
}

/** An occurrence about an endpoint itself (created, updated, deleted, disabled, its circuit opened or closed). */
export function endpointOccurrence(
  type:
    | 'endpoint.created'
    | 'endpoint.updated'
    | 'endpoint.deleted'
    | 'endpoint.disabled'
    | 'endpoint.circuit_opened'
    | 'endpoint.circuit_closed',
  subject: Subject,
  at: number,
  trigger?: DisableTrigger,
): Occurrence {
  return {
    orgId: subject.orgId,
    livemode: subject.livemode,
    type,
    at,
    data: {
      app_id: subject.appId,
      app_uid: subject.appUid,
      endpoint_id: subject.endpointId,
      endpoint_type: subject.endpointType,
      ...(trigger ? { trigger } : {}),
    },
  };
}

/**
 * An outcome event with the attempt that caused it (its delivery or endpoint, its time), if that attempt
 * is in the batch: what raising the event needs besides the store's rows. The PostgreSQL queue stores it
 * as JSON with the outcomes that raise it, and raises it right after (src/store/operational.ts).
 */
export interface CausedEvent {
  event: OutcomeEvent;
  lastAttempt: LastAttempt | null;
}

/** The events of an outcome batch with their causes among `attempts`, the batch's attempt rows. */
export function eventCauses(
  events: readonly OutcomeEvent[],
  attempts: readonly (PlannedAttempt & { endpoint_id: string })[],
): CausedEvent[] {
  return events.map((event) => {
    const cause = attempts.find((a) =>
      event.type === 'endpoint.disabled'
        ? a.endpoint_id === event.endpointId && a.created_at === event.at && a.status === 'failed'
        : a.delivery_id === event.deliveryId && a.created_at === event.at,
    );
    return { event, lastAttempt: cause ? lastAttemptOf(cause) : null };
  });
}

/**
 * The occurrences of an outcome batch's events, under their public names, each with its last_attempt when
 * known. An event whose subject is unknown (deleted meanwhile, or an operational endpoint's own) raises
 * nothing.
 */
export function outcomeOccurrences(
  caused: readonly CausedEvent[],
  subjects: ReadonlyMap<string, Subject>,
  messageOf: ReadonlyMap<string, string>,
): Occurrence[] {
  const occurrences: Occurrence[] = [];
  for (const { event, lastAttempt } of caused) {
    const subject = subjects.get(event.endpointId);
    if (!subject) continue;
    if (event.type === 'endpoint.disabled') {
      const occurrence = endpointOccurrence('endpoint.disabled', subject, event.at, event.trigger);
      if (lastAttempt) occurrence.data.last_attempt = lastAttempt;
      occurrences.push(occurrence);
      continue;
    }
    const messageId = messageOf.get(event.deliveryId);
    if (messageId === undefined) continue;
    occurrences.push({
      orgId: subject.orgId,
      livemode: subject.livemode,
      type: PUBLIC_NAMES[event.type],
      at: event.at,
      data: {
        app_id: subject.appId,
        app_uid: subject.appUid,
        endpoint_id: subject.endpointId,
        endpoint_type: subject.endpointType,
        message_id: messageId,
        delivery_id: event.deliveryId,
        ...(lastAttempt ? { last_attempt: lastAttempt } : {}),
      },
    });
  }
  return occurrences;
}
