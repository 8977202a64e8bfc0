import type { Expression, ExpressionBuilder, SelectQueryBuilder } from 'kysely';
import type { Executor } from '../common.js';
import type { Database } from '../schema.js';

// SQL pieces both drivers' statements are made of.

/**
 * Endpoints after outcomes that were all successes: `active` with no failure streak, whatever they were,
 * unless disabled (which an outcome never undoes). Only rows that change are written.
 */
export function markHealthy(
  db: Executor,
  endpointIds: readonly string[] | Expression<string> | SelectQueryBuilder<Database, 'endpoints', { id: string }>,
  at: number,
) {
  return db
    .updateTable('endpoints')
    .set({ status: 'active', failing_since: null, exhausted_at: null, updated_at: at })
    .where('id', 'in', endpointIds)
    .where('status', '!=', 'disabled')
    .where(changedBySuccess);
}

/** Endpoints a success writes to (markHealthy): not `active`, or still carrying a run of failures. */
export function changedBySuccess(eb: ExpressionBuilder<Database, 'endpoints'>) {
  return eb.or([eb('status', '!=', 'active'), eb('failing_since', 'is not', null)]);
}
