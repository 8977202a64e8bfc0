import { type Expression, sql } from 'kysely';
import type { EndpointStatus } from '../../domain/endpoint-state.js';
import { PARKED_AT } from '../../domain/fifo.js';
import { newId } from '../../domain/ids.js';
import { EMPTY_QUEUE, queuedHead, withManual } from '../../domain/queue-slot.js';
import type { DeliveryStatus } from '../../domain/states.js';
import { chunks, type Executor } from '../common.js';
import type { Dialect } from '../db.js';
import type { MessageRow, NewDeliveryRow } from '../schema.js';
import { QUEUE_COLUMNS } from './columns.js';
import { notHeld } from './lease.js';
import { rule, STOPPABLE, STOPPED } from './rules.js';

// The queue's book: every change to a delivery's queue columns (src/domain/queue-slot.ts) that is not the
// worker's own (claims, leases and outcomes, in the drivers beside this file) is one of these
// operations, and no code outside src/store/queue/ names those columns. Each takes the caller's executor,
// so it runs in the caller's transaction and keeps the caller's lock order (postgres.ts says it).

/**
 * A message's new delivery to one endpoint, its first attempt queued at `runAt`. A disabled endpoint's
 * delivery is `disabled` with nothing queued (enabling the endpoint does not queue it: retry, replay or
 * recover it); a FIFO endpoint's first attempt is parked (src/domain/fifo.ts) until its turn.
 */
export function firstAttempt(
  message: Pick<MessageRow, 'id' | 'org_id' | 'livemode' | 'app_id'>,
  endpoint: { id: string; status: EndpointStatus },
  runAt: number,
  now: number,
  parked = false,
): { delivery: NewDeliveryRow; queued: boolean } {
  const disabled = endpoint.status === 'disabled';
  const delivery: NewDeliveryRow = {
    id: newId('delivery', now),
    org_id: message.org_id,
    livemode: message.livemode,
    app_id: message.app_id,
    message_id: message.id,
    endpoint_id: endpoint.id,
    status: disabled ? 'disabled' : 'pending',
    attempt_count: 0,
    attempt_seq: disabled ? 0 : 1,
    schedule_step: 0,
    created_at: now,
    updated_at: now,
    ...(disabled ? EMPTY_QUEUE : queuedHead(1, 'scheduled', parked ? PARKED_AT : runAt)),
  };
  return { delivery, queued: !disabled };
}

/**
 * Queues one manual attempt for each of `deliveryIds` (a retry, a recovery), numbered after every attempt
 * made or queued (src/domain/queue-slot.ts, withManual). A `failed` or `disabled` delivery is `pending`
 * again until the attempt ends. `only` limits the deliveries taken to those in these statuses (a
 * recovery's `failed` and `disabled`). Returns each queued attempt's number by delivery id; a delivery
 * missing or not in `only` gets none. On PostgreSQL the deliveries are locked first, in id order.
 */
export async function enqueueManual(
  trx: Executor,
  dialect: Dialect,
  deliveryIds: readonly string[],
  now: number,
  only?: readonly DeliveryStatus[],
): Promise<Map<string, number>> {
  const numbers = new Map<string, number>();
  for (const part of chunks([...deliveryIds].sort())) {
    let read = trx
      .selectFrom('deliveries')
      .select(['id', 'status', ...QUEUE_COLUMNS])
      .where('id', 'in', part);
    if (only) read = read.where('status', 'in', only);
    if (dialect === 'postgres') read = read.orderBy('id').forUpdate();
    const deliveries = await read.execute();
    if (deliveries.length === 0) continue;
    const made = await trx
      .selectFrom('attempt_log')
      .select((eb) => ['delivery_id', eb.fn.max('attempt_number').as('n')])
      .where(
        'delivery_id',
        'in',
        deliveries.map((d) => d.id),
      )
      .groupBy('delivery_id')
      .execute();
    const madeUpTo = new Map(made.map((row) => [row.delivery_id, Number(row.n ?? 0)]));
    for (const delivery of deliveries) {
      const next = withManual(delivery, now, madeUpTo.get(delivery.id) ?? 0);
      numbers.set(delivery.id, next.number);
      await trx
        .updateTable('deliveries')
        .set({ ...next.queue, attempt_seq: next.attempt_seq, status: next.status, updated_at: now })
        .where('id', '=', delivery.id)
        .execute();
    }
  }
  return numbers;
}

/**
 * Stops the queued attempts of these endpoints: their queues empty, and their pending deliveries take
 * `status` (`disabled` when the endpoint is switched off, `failed` when it is deleted), so nothing is
 * dropped without a trace. The caller holds the endpoints' rows (deliveries after them).
 */
export async function stopEndpoints(
  db: Executor,
  endpointIds: readonly string[],
  status: 'disabled' | 'failed',
  now: number,
): Promise<void> {
  for (const part of chunks([...endpointIds])) {
    await sql`update deliveries set ${rule(STOPPED('deliveries'), { stopped: status, at: now })}
      where endpoint_id in (${sql.join(part)}) and ${rule(STOPPABLE('deliveries'))}`.execute(db);
  }
}

/**
 * Holds back an endpoint's queued attempts until `until` (a Retry-After pause, an open circuit): those no
 * worker holds; each waits then, and uses no attempt.
 */
export async function holdEndpoint(db: Executor, endpointId: string, until: number, now: number): Promise<void> {
  await db
    .updateTable('deliveries')
    .set({ run_at: until })
    .where('endpoint_id', '=', endpointId)
    .where('run_at', '<', until)
    .where(notHeld(now))
    .execute();
}

/** Makes due now an endpoint's queued attempts held back until `upTo` at the latest (a circuit that closed). */
export async function releaseHeld(db: Executor, endpointId: string, upTo: number, now: number): Promise<void> {
  await db
    .updateTable('deliveries')
    .set({ run_at: now })
    .where('endpoint_id', '=', endpointId)
    .where('run_at', '>', now)
    .where('run_at', '<=', upTo)
    .where(notHeld(now))
    .execute();
}

/**
 * When an unparked attempt is due: now, or its message's deliver_at while that is ahead (a parked first
 * attempt never went before it). For an update of `deliveries`: its message is read by primary key.
 */
export function unparkedRunAt(now: number) {
  return sql<number>`coalesce((select case when ${sql.ref('messages.deliver_at')} > ${now} then ${sql.ref('messages.deliver_at')} end from ${sql.table('messages')} where ${sql.ref('messages.id')} = ${sql.ref('deliveries.message_id')}), ${now})`;
}

/** Every parked attempt of an endpoint due (an endpoint no longer FIFO: src/domain/fifo.ts), as unparkedRunAt says. */
export async function unparkAll(db: Executor, endpointId: string, now: number): Promise<void> {
  await db
    .updateTable('deliveries')
    .set({ run_at: unparkedRunAt(now) })
    .where('endpoint_id', '=', endpointId)
    .where('run_at', '>=', PARKED_AT)
    .execute();
}

/**
 * Hands back the attempts held by workers whose last beat is before `cutoff` (src/store/workers.ts): due
 * now, owned by no one. The silence is read again in the statement, so a worker that beat meanwhile keeps
 * its attempts; an attempt whose lease ran out is claimable already and needs nothing. Returns how many moved.
 */
export async function releaseSilentWorkers(db: Executor, cutoff: number, now: number): Promise<number> {
  const released = await db
    .updateTable('deliveries')
    .set({ run_at: now, lease_owner: null, lease_until: null })
    // A held attempt was due when claimed: the due index's part up to now holds every one.
    .where('run_at', '<=', now)
    .where('lease_until', '>', now)
    .where('lease_owner', 'in', db.selectFrom('workers').select('id').where('beat_at', '<', cutoff))
    .executeTakeFirst();
  return Number(released.numUpdatedRows);
}

/** SQL: the delivery has an attempt queued (the retention purge keeps it). */
export const hasQueued = sql<boolean>`(${sql.ref('deliveries.run_at')} is not null or ${sql.ref('deliveries.queued_after')} is not null)`;

/**
 * Whether a delivery has an attempt at the head of its queue: what the due indexes hold. A delivery given a
 * manual attempt when it had none queued (a retry or a recovery of a settled one) always has one; hasQueued
 * adds the attempts waiting behind a head, which no index holds.
 */
export const hasHead = sql<boolean>`${sql.ref('deliveries.run_at')} is not null`;

/**
 * The attempts due now and the earliest of them, through the due index. Held attempts, held-back ones
 * (at the pause end) and parked FIFO ones (at PARKED_AT) are left out, so this is exactly what a claim
 * would take.
 */
export async function dueReading(db: Executor, now: number): Promise<{ due: number; oldestRunAt: number | null }> {
  const row = await db
    .selectFrom('deliveries')
    .select((eb) => [eb.fn.countAll().as('due'), eb.fn.min('run_at').as('oldest')])
    .where('run_at', '<=', now)
    .where(notHeld(now))
    .executeTakeFirst();
  return { due: Number(row?.due ?? 0), oldestRunAt: row?.oldest == null ? null : Number(row.oldest) };
}

/**
 * When a delivery's next attempt is due: its head's time when no worker holds it and it is not parked
 * (null: nothing waits, its attempt is under way, or it waits its FIFO turn).
 */
export function nextAttemptAt(now: number): Expression<number | null> {
  return sql<
    number | null
  >`(case when ${sql.ref('deliveries.run_at')} < ${PARKED_AT} and ${notHeld(now)} then ${sql.ref('deliveries.run_at')} end)`;
}
