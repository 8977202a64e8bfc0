import { type ExpressionBuilder, sql } from 'kysely';
import type { Database } from '../schema.js';

// The lease, in one place. A claim moves a task's `run_at` to the lease end and writes its `lease_owner`;
// the task is still its claimer's while both are unchanged. Everything that acts on a claimed task
// (extending its lease, releasing it, taking it with its outcome) checks this, and everything that must
// leave claimed tasks alone (holding an endpoint's attempts back, reading when a delivery's next attempt
// is due) checks the converse.

/** A claimed task, as far as its lease goes: its id and the lease end its claim wrote. */
export type Lease = { id: string; leaseUntil: number };

/** SQL: the task is `owner`'s under the lease that ends at `leaseUntil`. */
export function heldUnder(eb: ExpressionBuilder<Database, 'delivery_tasks'>, owner: string, leaseUntil: number) {
  return eb.and([eb('lease_owner', '=', owner), eb('run_at', '=', leaseUntil)]);
}

/** The same check on a row read back (a deleted task's `returning`). */
export function wasHeldUnder(
  row: { lease_owner: string | null; run_at: number | string },
  owner: string,
  lease: Lease,
): boolean {
  return row.lease_owner === owner && Number(row.run_at) === lease.leaseUntil;
}

/** SQL: no worker holds the task at `now`: never claimed or handed back, or its lease has run out. */
export function notHeld(now: number) {
  return sql<boolean>`(${sql.ref('delivery_tasks.lease_owner')} is null or ${sql.ref('delivery_tasks.run_at')} <= ${now})`;
}

/** Leases grouped by their end: the tasks of one claim share it, so a check is one `run_at = ?` per claim. */
export function byLeaseEnd(leases: readonly Lease[]): Map<number, string[]> {
  const byEnd = new Map<number, string[]>();
  for (const lease of leases) {
    const ids = byEnd.get(lease.leaseUntil);
    if (ids) ids.push(lease.id);
    else byEnd.set(lease.leaseUntil, [lease.id]);
  }
  return byEnd;
}
