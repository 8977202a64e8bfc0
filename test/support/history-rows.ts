import { EMPTY_QUEUE } from '../../src/domain/queue-slot.js';
import type { AttemptRow, DeliveryRow, MessageRow } from '../../src/store/schema.js';

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

export function historyRows(entry: HistoryEntry): { message: MessageRow; delivery: DeliveryRow; attempt: AttemptRow } {
  const common = { org_id: entry.orgId, livemode: 0, app_id: entry.appId, created_at: entry.at };
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
    },
    attempt: {
      id: entry.attemptId,
      delivery_id: entry.deliveryId,
      endpoint_id: entry.endpointId,
      attempt_number: 1,
      trigger: 'scheduled',
      status: entry.failed ? 'failed' : 'success',
      response_status: entry.failed ? 500 : 200,
      response_body: null,
      request_headers: null,
      response_headers: null,
      error: null,
      duration_ms: entry.durationMs ?? 1,
      created_at: entry.at,
    },
  };
}
