import type { ExpressionBuilder } from 'kysely';
import { NOT_HELD, rule } from './rules.js';
import type { Database } from '../schema.js';

// The lease, in one place. A claim writes a delivery's `lease_owner` and `lease_until`, columns no index
// covers; the head attempt is its claimer's while both are unchanged. Everything that acts on a claimed
// attempt (extending its lease, releasing it) checks this, and everything that must leave claimed
// attempts alone (claims, holding an endpoint's attempts back, reading when a delivery's next attempt is
// due) checks the converse.

/** A claimed attempt, as far as its lease goes: its delivery, its number and the lease end its claim wrote. */
export type Lease = { delivery_id: string; attempt_number: number; leaseUntil: number };

/** SQL: the delivery's head is `owner`'s under the lease that ends at `leaseUntil`. */
export function heldUnder(eb: ExpressionBuilder<Database, 'deliveries'>, owner: string, leaseUntil: number) {
  return eb.and([eb('lease_owner', '=', owner), eb('lease_until', '=', leaseUntil)]);
}

/** SQL: no worker holds the delivery's head at `now` (rules.ts, NOT_HELD). */
export function notHeld(now: number) {
  return rule(NOT_HELD('deliveries'), { now });
}

/** Leases grouped by their end: the attempts of one claim share it, so a check is one `lease_until = ?` per claim. */
export function byLeaseEnd<L extends Lease>(leases: readonly L[]): Map<number, L[]> {
  const byEnd = new Map<number, L[]>();
  for (const lease of leases) {
    const group = byEnd.get(lease.leaseUntil);
    if (group) group.push(lease);
    else byEnd.set(lease.leaseUntil, [lease]);
  }
  return byEnd;
}

/** SQL: the deliveries' heads are these attempts (delivery and number). */
export function headsAre(eb: ExpressionBuilder<Database, 'deliveries'>, leases: readonly Lease[]) {
  return eb(
    eb.refTuple('id', 'next_attempt'),
    'in',
    leases.map((lease) => eb.tuple(lease.delivery_id, lease.attempt_number)),
  );
}
