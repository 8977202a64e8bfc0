import { type ExpressionBuilder, sql } from 'kysely';
import type { Database } from '../schema.js';

// The lease, in one place. A claim writes a delivery's `lease_owner` and `lease_until`, columns no index
// covers; the head attempt is its claimer's while both are unchanged. Everything that acts on a claimed
// attempt (extending its lease, releasing it) checks this, and everything that must leave claimed
// attempts alone (claims, holding an endpoint's attempts back, reading when a delivery's next attempt is
// due) checks the converse.

/** A claimed attempt, as far as its lease goes: its delivery and the lease end its claim wrote. */
export type Lease = { delivery_id: string; leaseUntil: number };

/** SQL: the delivery's head is `owner`'s under the lease that ends at `leaseUntil`. */
export function heldUnder(eb: ExpressionBuilder<Database, 'deliveries'>, owner: string, leaseUntil: number) {
  return eb.and([eb('lease_owner', '=', owner), eb('lease_until', '=', leaseUntil)]);
}

/** SQL: no worker holds the delivery's head at `now`: never claimed or handed back, or its lease has run out. */
export function notHeld(now: number) {
  return sql<boolean>`(${sql.ref('deliveries.lease_owner')} is null or ${sql.ref('deliveries.lease_until')} <= ${now})`;
}

/** Leases grouped by their end: the attempts of one claim share it, so a check is one `lease_until = ?` per claim. */
export function byLeaseEnd(leases: readonly Lease[]): Map<number, string[]> {
  const byEnd = new Map<number, string[]>();
  for (const lease of leases) {
    const ids = byEnd.get(lease.leaseUntil);
    if (ids) ids.push(lease.delivery_id);
    else byEnd.set(lease.leaseUntil, [lease.delivery_id]);
  }
  return byEnd;
}
