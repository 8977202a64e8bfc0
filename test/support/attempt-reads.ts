import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { EMPTY_QUEUE } from '../../src/domain/queue-slot.js';
import type { Database } from '../../src/store/schema.js';

/**
 * A plan (PostgreSQL's `explain (format json)` or SQLite's `explain query plan`, as JSON) of a read of
 * attempts by endpoint and time through `attempt_log`: both places an attempt is recorded are read through
 * their index by endpoint and time, and neither table whole.
 */
export function assertIndexReads(plan: string): void {
  assert.match(plan, /attempts_by_endpoint_time/, plan);
  // A delivery's first attempts by time through their own index, or by endpoint through its deliveries.
  assert.match(plan, /deliveries_first_attempts|deliveries_by_endpoint/, plan);
  // The view's parts (a join to deliveries for their messages is another read, by primary key or not).
  assert.doesNotMatch(
    plan,
    /"Seq Scan"[^{}]*"Relation Name":"(attempts|deliveries)","Alias":"(attempts|deliveries)"/,
    plan,
  );
  assert.doesNotMatch(plan, /SCAN (attempts|deliveries)\b(?! USING)/, plan);
}

/** An attempt to write as the store records it (writeAttempts). */
export interface WrittenAttempt {
  id: string;
  delivery_id: string;
  endpoint_id: string;
  status: 'success' | 'failed';
  response_status: number | null;
  duration_ms: number;
  created_at: number;
}

/**
 * Writes attempts where the store records them: one that delivered as its delivery's first attempt, on a
 * delivery row of its own; one that failed as a row of `attempts`.
 */
export async function writeAttempts(db: Kysely<Database>, attempts: readonly WrittenAttempt[]): Promise<void> {
  for (let i = 0; i < attempts.length; i += 400) {
    const part = attempts.slice(i, i + 400);
    const failed = part.filter((a) => a.status !== 'success');
    const delivered = part.filter((a) => a.status === 'success');
    if (failed.length > 0)
      await db
        .insertInto('attempts')
        .values(
          failed.map((a) => ({
            ...a,
            attempt_number: 1,
            trigger: 'scheduled' as const,
            response_body: null,
            error: null,
          })),
        )
        .execute();
    if (delivered.length > 0)
      await db
        .insertInto('deliveries')
        .values(
          delivered.map((a) => ({
            id: a.delivery_id,
            org_id: 'org_history',
            livemode: 0,
            app_id: 'app_history',
            message_id: `evt_${a.delivery_id}`,
            endpoint_id: a.endpoint_id,
            status: 'success' as const,
            attempt_count: 1,
            attempt_seq: 1,
            schedule_step: 1,
            created_at: a.created_at,
            updated_at: a.created_at,
            ...EMPTY_QUEUE,
            first_attempt_id: a.id,
            first_attempt_at: a.created_at,
            first_duration_ms: a.duration_ms,
            first_response_status: a.response_status,
          })),
        )
        .execute();
  }
}
