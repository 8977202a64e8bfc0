// The named states of what changes over time, one list each: the store's columns are typed with them,
// the API's schemas are built from them, and no code reads one as a plain string.

/**
 * A delivery: `pending` until an attempt succeeds (`success`) or its last scheduled attempt fails
 * (`failed`); `disabled` while its endpoint is. A manual attempt queued for a `failed` or `disabled`
 * delivery (a recovery's) makes it `pending` again until that attempt ends.
 */
export const DELIVERY_STATUSES = ['pending', 'success', 'failed', 'disabled'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** Why an attempt is made: the retry schedule's, or asked for (a retry, a recovery). */
export const ATTEMPT_TRIGGERS = ['scheduled', 'manual'] as const;
export type AttemptTrigger = (typeof ATTEMPT_TRIGGERS)[number];

/**
 * How an attempt ended: a 2xx (or a broker's acknowledgement), anything else, or `cancelled` by the
 * endpoint's transformation (no request was made; the delivery ends as delivered).
 */
export const ATTEMPT_STATUSES = ['success', 'failed', 'cancelled'] as const;
export type AttemptStatus = (typeof ATTEMPT_STATUSES)[number];

/**
 * A background task: running (leased batch by batch), then finished, failed after failures in a row, or
 * cancelled (POST /api/v1/background-tasks/{id}/cancel: no batch starts after it, and the one under way
 * is rolled back).
 */
export const BACKGROUND_TASK_STATUSES = ['running', 'finished', 'failed', 'cancelled'] as const;
export type BackgroundTaskStatus = (typeof BACKGROUND_TASK_STATUSES)[number];

/**
 * `endpoint.recover`: failed deliveries get one more attempt; `endpoint.replay`: messages an endpoint never
 * got are sent to it; `endpoint.bulk_replay`: each of an endpoint's deliveries that match a filter gets one
 * more attempt.
 */
export const BACKGROUND_TASK_KINDS = ['endpoint.recover', 'endpoint.replay', 'endpoint.bulk_replay'] as const;
export type BackgroundTaskKind = (typeof BACKGROUND_TASK_KINDS)[number];
