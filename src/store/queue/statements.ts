import type { Expression, SelectQueryBuilder } from 'kysely';
import { CHANGED_BY_SUCCESS, rule } from './rules.js';
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
    .where(changedBySuccess());
}

/** Endpoints a success writes to (markHealthy; rules.ts, CHANGED_BY_SUCCESS). */
export function changedBySuccess() {
  return rule(CHANGED_BY_SUCCESS('endpoints'));
}
