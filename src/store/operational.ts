import { newId, randomToken } from '../domain/ids.js';
import { hashToken } from '../domain/secrets.js';
import { subscribes } from '../domain/envelope.js';
import { type CausedEvent, type Occurrence, outcomeOccurrences, type Subject } from '../domain/operational.js';
import type { Dialect } from './db.js';
import { chunks, type Executor, liveFlag, parseJsonList, type Scope } from './common.js';
import { insertRows } from './insert-rows.js';
import { scheduledDelay } from '../domain/retry.js';
import { book, type OutcomeEventSink } from './queue/index.js';
import type { Database, MessageRow, NewDeliveryRow, PayloadRow } from './schema.js';
import type { Kysely } from 'kysely';

// Operational webhooks in the store. An environment's operational endpoints are endpoints of its hidden
// application (`operational` = 1 on both rows), so their messages, deliveries and attempts are ordinary
// rows: the queue signs, sends and retries them, and the delivery reads show them.
//
// An occurrence is raised inside the transaction that makes it happen (an outcome recorded, an endpoint
// created, updated, disabled or deleted): it is written exactly once however many workers record
// outcomes, and a crash loses it only together with what it describes. Receivers dedupe on webhook-id,
// the operational message's id, for the retries of at-least-once delivery.

/** How raising queues the first attempt of an operational delivery. */
export interface RaisePolicy {
  dialect: Dialect;
  /** Delay before the first attempt (HERALD_RETRY_SCHEDULE's first step). */
  firstDelayMs: number;
}

/** Operational events queue their first attempt as an emit does: after the schedule's first step. */
export function raisePolicy(dialect: Dialect, retryScheduleMs: number[]): RaisePolicy {
  return { dialect, firstDelayMs: scheduledDelay(retryScheduleMs, 0) ?? 0 };
}

/**
 * The environment's hidden application as a subquery, for lists that leave operational messages out: an
 * environment's messages and deliveries are its applications' traffic, and Herald's own events about them
 * are read through the operational endpoint (its deliveries), by id, or with the hidden app_id as a filter.
 */
export function hiddenApplication(db: Executor, scope: Scope) {
  return db
    .selectFrom('applications')
    .select('id')
    .where('org_id', '=', scope.orgId)
    .where('livemode', '=', liveFlag(scope))
    .where('operational', '=', 1);
}

/**
 * The environment's hidden application, made on first use. Concurrent first uses insert one row (a unique
 * index on the environment where `operational` = 1) and all read it.
 */
export async function operationalApplication(db: Executor, scope: Scope, now: number): Promise<string> {
  const find = () =>
    db
      .selectFrom('applications')
      .select('id')
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope))
      .where('operational', '=', 1)
      .executeTakeFirst();
  const found = await find();
  if (found) return found.id;
  await db
    .insertInto('applications')
    .values({
      id: newId('application', now),
      org_id: scope.orgId,
      livemode: liveFlag(scope),
      name: 'Operational webhooks',
      uid: null,
      // No portal opens it: the token is never shown.
      portal_token_hash: hashToken(randomToken(32)),
      operational: 1,
      metadata: '{}',
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.doNothing())
    .execute();
  return (await find())!.id;
}

/**
 * Writes each occurrence as a message of its environment's hidden application, with a delivery to each
 * operational endpoint subscribed to its type (a disabled one's delivery is `disabled`, as an emit's is).
 * An environment without operational endpoints gets nothing. Returns how many attempts it queued.
 */
export async function raiseOccurrences(
  db: Executor,
  policy: RaisePolicy,
  occurrences: readonly Occurrence[],
  now: number,
): Promise<number> {
  if (occurrences.length === 0) return 0;
  const recipients = await db
    .selectFrom('endpoints')
    .select(['id', 'app_id', 'org_id', 'livemode', 'status', 'event_types'])
    .where('operational', '=', 1)
    .where('org_id', 'in', [...new Set(occurrences.map((o) => o.orgId))])
    .orderBy('id')
    .execute();
  if (recipients.length === 0) return 0;
  const messages: MessageRow[] = [];
  const payloads: PayloadRow[] = [];
  const deliveries: NewDeliveryRow[] = [];
  let queued = 0;
  const runAt = now + policy.firstDelayMs;
  for (const occurrence of occurrences) {
    const to = recipients.filter(
      (r) =>
        r.org_id === occurrence.orgId &&
        r.livemode === occurrence.livemode &&
        subscribes(parseJsonList(r.event_types), occurrence.type),
    );
    if (to.length === 0) continue;
    const message: MessageRow = {
      id: newId('message', occurrence.at),
      org_id: occurrence.orgId,
      livemode: occurrence.livemode,
      app_id: to[0]!.app_id,
      event_type: occurrence.type,
      event_id: null,
      channels: null,
      tags: null,
      traceparent: null,
      tracestate: null,
      deliver_at: null,
      created_at: occurrence.at,
    };
    messages.push(message);
    payloads.push({
      message_id: message.id,
      body: JSON.stringify(occurrence.data),
      created_at: occurrence.at,
      expires_at: null,
    });
    for (const endpoint of to) {
      const made = book.firstAttempt(message, endpoint, runAt, now);
      deliveries.push(made.delivery);
      if (made.queued) queued++;
    }
  }
  for (const part of [
    { table: 'messages', rows: messages } as const,
    { table: 'payloads', rows: payloads } as const,
    { table: 'deliveries', rows: deliveries } as const,
  ])
    await insertRows(db, policy.dialect, part.table, part.rows as never);
  return queued;
}

/**
 * The applications and environments of these endpoints, keyed by endpoint id: operational endpoints, and
 * endpoints deleted meanwhile, are left out (nothing is raised about them).
 */
export async function subjectsOf(db: Executor, endpointIds: readonly string[]): Promise<Map<string, Subject>> {
  const subjects = new Map<string, Subject>();
  for (const part of chunks([...new Set(endpointIds)])) {
    const rows = await db
      .selectFrom('endpoints')
      .innerJoin('applications', 'applications.id', 'endpoints.app_id')
      .select([
        'endpoints.id',
        'endpoints.org_id',
        'endpoints.livemode',
        'endpoints.app_id',
        'endpoints.type',
        'applications.uid',
      ])
      .where('endpoints.id', 'in', part)
      .where('endpoints.operational', '=', 0)
      .execute();
    for (const row of rows)
      subjects.set(row.id, {
        orgId: row.org_id,
        livemode: row.livemode,
        appId: row.app_id,
        appUid: row.uid,
        endpointId: row.id,
        endpointType: row.type,
      });
  }
  return subjects;
}

/**
 * Raises the operational events of a batch of outcomes (with their causes: eventCauses), in the
 * transaction that records them or deletes them from outcome_events. Reads nothing when there is none.
 */
export async function raiseOutcomeEvents(
  db: Executor,
  policy: RaisePolicy,
  caused: readonly CausedEvent[],
  now: number,
): Promise<number> {
  if (caused.length === 0) return 0;
  const subjects = await subjectsOf(
    db,
    caused.map(({ event }) => event.endpointId),
  );
  if (subjects.size === 0) return 0;
  const deliveryIds = caused.flatMap(({ event }) => (event.type === 'endpoint.disabled' ? [] : [event.deliveryId]));
  const messageOf = new Map<string, string>();
  for (const part of chunks([...new Set(deliveryIds)])) {
    const rows = await db.selectFrom('deliveries').select(['id', 'message_id']).where('id', 'in', part).execute();
    for (const row of rows) messageOf.set(row.id, row.message_id);
  }
  return raiseOccurrences(db, policy, outcomeOccurrences(caused, subjects, messageOf), now);
}

/** Stored events raised per transaction: each is a few rows, so a transaction stays short. */
const STORED_EVENTS_PER_RAISE = 100;

/**
 * Raises the events stored in outcome_events (outcomes recorded in one PostgreSQL statement), oldest
 * first, up to STORED_EVENTS_PER_RAISE, and deletes them in the same transaction: each is raised once,
 * however many processes raise at once (a second delete of a row waits for the first and then finds it
 * gone). Reads first and writes nothing when none is stored, which is nearly always. Returns how many
 * attempts of operational webhooks it queued.
 */
export async function raiseStoredEvents(db: Kysely<Database>, policy: RaisePolicy, now: number): Promise<number> {
  const stored = await db.selectFrom('outcome_events').select('id').limit(1).executeTakeFirst();
  if (!stored) return 0;
  return db.transaction().execute(async (trx) => {
    const oldest = trx.selectFrom('outcome_events').select('id').orderBy('id').limit(STORED_EVENTS_PER_RAISE);
    const rows = await trx.deleteFrom('outcome_events').where('id', 'in', oldest).returning(['id', 'body']).execute();
    const caused = rows.sort((x, y) => (x.id < y.id ? -1 : 1)).map((row) => JSON.parse(row.body) as CausedEvent);
    return raiseOutcomeEvents(trx, policy, caused, now);
  });
}

/** The queue's sink for the operational events of outcomes (src/store/queue/index.ts, OutcomeEventSink). */
export function outcomeEventSink(db: Kysely<Database>, policy: RaisePolicy): OutcomeEventSink {
  return {
    raise: (trx, caused, now) => raiseOutcomeEvents(trx, policy, caused, now),
    raiseStored: (now) => raiseStoredEvents(db, policy, now),
  };
}
