import { type Expression, type ExpressionBuilder, type SelectQueryBuilder, sql } from 'kysely';
import type { OutcomeTask } from '../../domain/outcome-plan.js';
import type { Executor } from '../common.js';
import type { Database } from '../schema.js';

// SQL pieces both drivers' statements are made of.

/** A claimed task as far as ownership goes: its id and the lease end its claim wrote. */
export type Leased = { id: string; leaseUntil: number };

/**
 * min(run_at) of one delivery's tasks, written `run_at + 0` so that the planner looks the delivery's few
 * tasks up by delivery_id: with plain min(run_at) PostgreSQL (without fresh statistics) walks the
 * (run_at, id) index in order until it meets one of them, which reads the whole queue for a delivery that
 * has none left (the common case after a success).
 */
export function minRunAt() {
  return sql<number | null>`min(${sql.ref('delivery_tasks.run_at')} + 0)`;
}

/** When the delivery's next queued attempt runs (null: none left), leaving out the task ids of `except`. */
export function nextRunAt(deliveryId: Expression<string>, except?: Expression<string>) {
  const left = except ? sql` and ${sql.ref('delivery_tasks.id')} not in (${except})` : sql``;
  return sql<
    number | null
  >`(select ${minRunAt()} from ${sql.table('delivery_tasks')} where ${sql.ref('delivery_tasks.delivery_id')} = ${deliveryId}${left})`;
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

/** Task ids grouped by the lease end their claim wrote. */
export function idsByLease(tasks: readonly Leased[]): Map<number, string[]> {
  const byLease = new Map<number, string[]>();
  for (const task of tasks) {
    const ids = byLease.get(task.leaseUntil);
    if (ids) ids.push(task.id);
    else byLease.set(task.leaseUntil, [task.id]);
  }
  return byLease;
}

/** Ids of the deleted `rows` that were still ours: same owner, same lease end as when we claimed them. */
export function ownedTasks(
  tasks: readonly Leased[],
  rows: { id: string; lease_owner: string | null; run_at: number }[],
  owner: string,
): Set<string> {
  const byId = new Map(tasks.map((task) => [task.id, task]));
  const owned = new Set<string>();
  for (const row of rows) {
    const task = byId.get(row.id);
    if (task && row.lease_owner === owner && Number(row.run_at) === task.leaseUntil) owned.add(row.id);
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
  const byLease = idsByLease(tasks);
  const ours = eb.and([
    eb('lease_owner', '=', owner),
    eb.or([...byLease].map(([leaseUntil, ids]) => eb.and([eb('run_at', '=', leaseUntil), eb('id', 'in', ids)]))),
  ]);
  return deliveredHere.length === 0
    ? ours
    : eb.or([ours, eb.and([eb('delivery_id', 'in', deliveredHere), eb('trigger', '=', 'scheduled')])]);
}
