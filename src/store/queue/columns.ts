import type { PlannedAttempt } from '../../domain/outcome-plan.js';
import type { FirstAttemptColumns } from '../schema.js';

// The columns of a delivery's queue (src/domain/queue-slot.ts, QueueColumns), named once for every read.
export const QUEUE_COLUMNS = [
  'run_at',
  'next_trigger',
  'next_attempt',
  'lease_owner',
  'lease_until',
  'queued_after',
] as const;

/**
 * A delivery's first-attempt columns (FirstAttemptColumns), each with the field of the planned attempt it
 * records and its PostgreSQL type: the one list every writer of them follows.
 */
export const FIRST_ATTEMPT_COLUMNS = [
  ['first_attempt_id', 'id', 'text'],
  ['first_attempt_at', 'created_at', 'bigint'],
  ['first_duration_ms', 'duration_ms', 'bigint'],
  ['first_response_status', 'response_status', 'bigint'],
  ['first_response_body', 'response_body', 'text'],
  ['first_request_headers', 'request_headers', 'text'],
  ['first_response_headers', 'response_headers', 'text'],
  ['first_request', 'request', 'text'],
] as const satisfies readonly (readonly [keyof FirstAttemptColumns, keyof PlannedAttempt, 'text' | 'bigint'])[];
