import { type Expression, sql } from 'kysely';
import type { EndpointStatus } from '../../domain/endpoint-state.js';
import { PARKED_AT } from '../../domain/fifo.js';
import { newId } from '../../domain/ids.js';
import type { DeliveryStatus } from '../../domain/states.js';
import { chunks, type Executor } from '../common.js';
import type { Dialect } from '../db.js';
import type { TableRows } from '../insert-rows.js';
import type { DeliveryRow, MessageRow, TaskRow } from '../schema.js';
import { notHeld } from './lease.js';

// The queue's book: every change to `delivery_tasks` that is not the worker's own (claims, leases and
// outcomes, in the drivers beside this file) is one of these operations, and no code outside
// src/store/queue/ names the table. Each takes the caller's executor, so it runs in the caller's
// transaction and keeps the caller's lock order (postgres.ts says it). A delivery's next attempt time is
// not stored: it is read from its tasks (nextAttemptAt), so no operation has a second row to keep in step.

/**
 * A message's new delivery to one endpoint and its first attempt, due at `runAt`. A disabled endpoint's
 * delivery is `disabled` with no attempt (enabling the endpoint does not queue it: retry, replay or
 * recover it); a FIFO endpoint's first attempt is parked (src/domain/fifo.ts) until its turn.
 */
export function firstAttempt(
  message: Pick<MessageRow, 'id' | 'org_id' | 'livemode' | 'app_id'>,
  endpoint: { id: string; status: EndpointStatus },
  runAt: number,
  now: number,
  parked = false,
): { delivery: DeliveryRow; task: TaskRow | null } {
  const disabled = endpoint.status === 'disabled';
  const delivery: DeliveryRow = {
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
  };
  const task: TaskRow | null = disabled
    ? null
    : {
        id: newId('task', now),
        delivery_id: delivery.id,
        endpoint_id: endpoint.id,
        trigger: 'scheduled',
        attempt_number: 1,
        run_at: parked ? PARKED_AT : runAt,
        lease_owner: null,
      };
  return { delivery, task };
}

/** First attempts as a part of a multi-table insert (insertTogether, insertRows): the book's rows. */
export function queuedTasks(tasks: readonly TaskRow[]): TableRows {
  return { table: 'delivery_tasks', rows: tasks };
}

/**
 * Queues one manual attempt for each of `deliveryIds` (a retry, a recovery), numbered after every attempt
 * made or queued ahead of it; a scheduled attempt still waiting moves one number back (it runs after).
 * A `failed` or `disabled` delivery is `pending` again until the attempt ends. `only` limits the
 * deliveries taken to those in these statuses (a recovery's `failed` and `disabled`). Returns each queued
 * attempt's number by delivery id; a delivery missing or not in `only` gets none.
 *
 * On PostgreSQL the deliveries are locked first, in id order, and the waiting tasks taken without waiting
 * (SKIP LOCKED): a task locked elsewhere is being claimed or deleted, counts as ahead and keeps its number.
 * Waiting for it could deadlock with an outcome that holds the delivery's lock in turn.
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
    let read = trx.selectFrom('deliveries').select(['id', 'endpoint_id', 'status']).where('id', 'in', part);
    if (only) read = read.where('status', 'in', only);
    if (dialect === 'postgres') read = read.orderBy('id').forUpdate();
    const deliveries = await read.execute();
    if (deliveries.length === 0) continue;
    const ids = deliveries.map((d) => d.id);
    let waitingRead = trx
      .selectFrom('delivery_tasks')
      .select(['id', 'delivery_id'])
      .where('delivery_id', 'in', ids)
      .where('trigger', '=', 'scheduled')
      .where('lease_owner', 'is', null);
    if (dialect === 'postgres') waitingRead = waitingRead.forUpdate().skipLocked();
    const waiting = await waitingRead.execute();
    const waitingIds = waiting.map((t) => t.id);
    const made = await trx
      .selectFrom('attempts')
      .select((eb) => ['delivery_id', eb.fn.max('attempt_number').as('n')])
      .where('delivery_id', 'in', ids)
      .groupBy('delivery_id')
      .execute();
    let aheadRead = trx
      .selectFrom('delivery_tasks')
      .select((eb) => ['delivery_id', eb.fn.max('attempt_number').as('n')])
      .where('delivery_id', 'in', ids)
      .groupBy('delivery_id');
    if (waitingIds.length > 0) aheadRead = aheadRead.where('id', 'not in', waitingIds);
    const ahead = await aheadRead.execute();
    const before = new Map<string, number>();
    for (const { delivery_id, n } of [...made, ...ahead])
      before.set(delivery_id, Math.max(before.get(delivery_id) ?? 0, Number(n ?? 0)));
    const waitingOf = new Map(waiting.map((t) => [t.delivery_id, t.id]));
    const highest = new Map<string, number>();
    const tasks: TaskRow[] = [];
    for (const delivery of deliveries) {
      const number = (before.get(delivery.id) ?? 0) + 1;
      numbers.set(delivery.id, number);
      highest.set(delivery.id, waitingOf.has(delivery.id) ? number + 1 : number);
      tasks.push({
        id: newId('task', now),
        delivery_id: delivery.id,
        endpoint_id: delivery.endpoint_id,
        trigger: 'manual',
        attempt_number: number,
        run_at: now,
        lease_owner: null,
      });
    }
    for (const [deliveryId, taskId] of waitingOf)
      await trx
        .updateTable('delivery_tasks')
        .set({ attempt_number: highest.get(deliveryId)! })
        .where('id', '=', taskId)
        .execute();
    await trx.insertInto('delivery_tasks').values(tasks).execute();
    for (const [seq, group] of groupBy(deliveries, (d) => highest.get(d.id)!))
      await trx
        .updateTable('deliveries')
        .set((eb) => ({
          attempt_seq: seq,
          status: eb
            .case()
            .when('status', 'in', ['failed', 'disabled'])
            .then(eb.val<DeliveryStatus>('pending'))
            .else(eb.ref('status'))
            .end(),
          updated_at: now,
        }))
        .where(
          'id',
          'in',
          group.map((d) => d.id),
        )
        .execute();
  }
  return numbers;
}

/**
 * Stops the queued attempts of these endpoints: their tasks go, and their pending deliveries take
 * `status` (`disabled` when the endpoint is switched off, `failed` when it is deleted), so nothing is
 * dropped without a trace. The caller holds the endpoints' rows (tasks, then deliveries, after them).
 */
export async function stopEndpoints(
  db: Executor,
  endpointIds: readonly string[],
  status: 'disabled' | 'failed',
  now: number,
): Promise<void> {
  for (const part of chunks([...endpointIds])) {
    await db.deleteFrom('delivery_tasks').where('endpoint_id', 'in', part).execute();
    await db
      .updateTable('deliveries')
      .set({ status, updated_at: now })
      .where('endpoint_id', 'in', part)
      .where('status', '=', 'pending')
      .execute();
  }
}

/** Every parked attempt of an endpoint due now (an endpoint no longer FIFO: src/domain/fifo.ts). */
export async function unparkAll(db: Executor, endpointId: string, now: number): Promise<void> {
  await db
    .updateTable('delivery_tasks')
    .set({ run_at: now })
    .where('endpoint_id', '=', endpointId)
    .where('run_at', '>=', PARKED_AT)
    .execute();
}

/**
 * Hands back the claimed tasks of workers whose last beat is before `cutoff` (src/store/workers.ts): due
 * now, owned by no one. The silence is read again in the statement, so a worker that beat meanwhile keeps
 * its attempts; a task whose lease ran out is due already and needs nothing. Returns how many moved.
 */
export async function releaseSilentWorkers(db: Executor, cutoff: number, now: number): Promise<number> {
  const released = await db
    .updateTable('delivery_tasks')
    .set({ run_at: now, lease_owner: null })
    .where('run_at', '>', now)
    .where('lease_owner', 'in', db.selectFrom('workers').select('id').where('beat_at', '<', cutoff))
    .executeTakeFirst();
  return Number(released.numUpdatedRows);
}

/** The deliveries with an attempt queued, as a subquery (the retention purge keeps them). */
export const queuedDeliveries = (db: Executor) => db.selectFrom('delivery_tasks').select('delivery_tasks.delivery_id');

/**
 * The attempts due now and the earliest of them, through the index on (run_at, id). Leased tasks (run_at
 * at their lease end), held ones (at the pause end) and parked FIFO ones (at PARKED_AT) lie in the future,
 * so `run_at <= now` is exactly what a claim would take.
 */
export async function dueReading(db: Executor, now: number): Promise<{ due: number; oldestRunAt: number | null }> {
  const row = await db
    .selectFrom('delivery_tasks')
    .select((eb) => [eb.fn.countAll().as('due'), eb.fn.min('run_at').as('oldest')])
    .where('run_at', '<=', now)
    .executeTakeFirst();
  return { due: Number(row?.due ?? 0), oldestRunAt: row?.oldest == null ? null : Number(row.oldest) };
}

/**
 * When a delivery's next attempt is due, read from its tasks: the earliest that no worker holds, parked
 * FIFO ones left out (null: none is waiting, its attempt is under way, or it waits its FIFO turn).
 * `run_at + 0` keeps PostgreSQL on the tasks' delivery_id index (without fresh statistics it would walk
 * the (run_at, id) index in order until it met one of the delivery's tasks).
 */
export function nextAttemptAt(deliveryId: Expression<string>, now: number) {
  return sql<number | null>`(select min(${sql.ref('delivery_tasks.run_at')} + 0) from ${sql.table('delivery_tasks')}
    where ${sql.ref('delivery_tasks.delivery_id')} = ${deliveryId} and ${sql.ref('delivery_tasks.run_at')} < ${PARKED_AT}
    and ${notHeld(now)})`;
}

function groupBy<T, K>(items: readonly T[], key: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}
