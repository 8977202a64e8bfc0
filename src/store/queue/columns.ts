// The columns of a delivery's queue (src/domain/queue-slot.ts, QueueColumns), named once for every read.
export const QUEUE_COLUMNS = [
  'run_at',
  'next_trigger',
  'next_attempt',
  'lease_owner',
  'lease_until',
  'queued_after',
] as const;
