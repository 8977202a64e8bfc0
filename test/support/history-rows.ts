import { EMPTY_QUEUE } from '../../src/domain/queue-slot.js';
import type { AttemptRow, FirstAttemptColumns, MessageRow, NewDeliveryRow } from '../../src/store/schema.js';

// Rows of a tenant's history written straight to a store, for tests of reads over more traffic than the
// API could make in a test's time: a message, its delivery to one endpoint, and that delivery's one attempt.

export interface HistoryEntry {
  orgId: string;
  appId: string;
  endpointId: string;
  messageId: string;
  deliveryId: string;
  attemptId: string;
  eventType: string;
  failed: boolean;
  at: number;
  durationMs?: number;
}

/**
 * The rows of one entry as the store records them: a first attempt that delivered on its delivery row
 * (its `first_*` columns), a failed one as a row of `attempts` (null when there is none).
 */
export function historyRows(entry: HistoryEntry): {
  message: MessageRow;
  delivery: NewDeliveryRow & Partial<FirstAttemptColumns>;
  attempt: AttemptRow | null;
} {
  const common = { org_id: entry.orgId, livemode: 0, app_id: entry.appId, created_at: entry.at };
  const durationMs = entry.durationMs ?? 1;
  return {
    message: {
      ...common,
      id: entry.messageId,
      event_type: entry.eventType,
      event_id: null,
      channels: null,
      tags: null,
      traceparent: null,
      tracestate: null,
      deliver_at: null,
    },
    delivery: {
      ...common,
      id: entry.deliveryId,
      message_id: entry.messageId,
      endpoint_id: entry.endpointId,
      status: entry.failed ? 'failed' : 'success',
      attempt_count: 1,
      attempt_seq: 1,
      schedule_step: 1,
      updated_at: entry.at,
      ...EMPTY_QUEUE,
      ...(entry.failed
        ? {}
        : {
            first_attempt_id: entry.attemptId,
            first_attempt_at: entry.at,
            first_duration_ms: durationMs,
            first_response_status: 200,
          }),
    },
    attempt: entry.failed
      ? {
          id: entry.attemptId,
          delivery_id: entry.deliveryId,
          endpoint_id: entry.endpointId,
          attempt_number: 1,
          trigger: 'scheduled',
          status: 'failed',
          response_status: 500,
          response_body: null,
          request_headers: null,
          response_headers: null,
          error: null,
          duration_ms: durationMs,
          created_at: entry.at,
          request: null,
        }
      : null,
  };
}
