import { type Expression, type ExpressionBuilder, type SelectQueryBuilder, sql } from 'kysely';
import type { OutcomeTask } from '../../domain/outcome-plan.js';
import type { Executor } from '../common.js';
import type { Database } from '../schema.js';
import { byLeaseEnd, heldUnder, type Lease, wasHeldUnder } from './lease.js';

// SQL pieces both drivers' statements are made of.

/** Whether a delivery has a task queued (1) or not (0): an attempt waiting or under way. */
export function hasTask(deliveryId: Expression<string>) {
  return sql<number>`(case when exists (select 1 from ${sql.table('delivery_tasks')} where ${sql.ref('delivery_tasks.delivery_id')} = ${deliveryId}) then 1 else 0 end)`;
}

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

/** Ids of the deleted `rows` that were still ours: same owner, same lease end as when we claimed them. */
export function ownedTasks(
  tasks: readonly Lease[],
  rows: { id: string; lease_owner: string | null; run_at: number }[],
  owner: string,
): Set<string> {
  const byId = new Map(tasks.map((task) => [task.id, task]));
  const owned = new Set<string>();
  for (const row of rows) {
    const task = byId.get(row.id);
    if (task && wasHeldUnder(row, owner, task)) owned.add(row.id);
  }
  return owned;
}

/** The deliveries among `delivered` that `tasks` belong to. */
export function deliveredOf(tasks: readonly OutcomeTask[], delivered: ReadonlySet<string>): string[] {
  return [...new Set(tasks.filter((t) => delivered.has(t.delivery_id)).map((t) => t.delivery_id))];
}

/**
 * The tasks an outcome batch takes (TaskTake): `tasks` while `owner` holds them (same lease end), and the
 * scheduled attempts of the deliveries `deliveredHere`.
 */
export function takenTasks(
  eb: ExpressionBuilder<Database, 'delivery_tasks'>,
  tasks: readonly OutcomeTask[],
  owner: string,
  deliveredHere: readonly string[],
) {
  // Tasks of one claim share their lease end: one `run_at = ? and id in (...)` per claim.
  const ours = eb.or(
    [...byLeaseEnd(tasks)].map(([leaseUntil, ids]) => eb.and([heldUnder(eb, owner, leaseUntil), eb('id', 'in', ids)])),
  );
  return deliveredHere.length === 0
    ? ours
    : eb.or([ours, eb.and([eb('delivery_id', 'in', deliveredHere), eb('trigger', '=', 'scheduled')])]);
}
