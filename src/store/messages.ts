import { FilterBudget } from '../domain/content-filter.js';
import { isUniqueViolation } from './errors.js';
import { sql } from 'kysely';
import { idFloor, newId } from '../domain/ids.js';
import { scheduledDelay } from '../domain/retry.js';
import { scheduleMs } from '../domain/retry-schedule.js';
import { GroupCommit } from './group-commit.js';
import { insertTogether } from './insert-rows.js';
import {
  chunks,
  listHolds,
  liveFlag,
  parseJsonList,
  envelopeOnce,
  receives,
  toPage,
  type Executor,
  type Page,
  type PageRequest,
  type Scope,
  type StoreContext,
} from './common.js';
import type { EndpointRow, MessageRow, NewDeliveryRow } from './schema.js';
import { hiddenApplication } from './operational.js';
import { book } from './queue/index.js';
import { beforeRevival } from './partitions/index.js';

export interface EmitRequest {
  scope: Scope;
  appId: string;
  eventType: string;
  /** The payload object as JSON text. */
  payloadJson: string;
  idempotencyKey: string | null;
  /** The sender's id for the message: a second message with it in the environment is refused. */
  eventId?: string | null | undefined;
  /** Routing channels (src/domain/envelope.ts, sharesChannel) and labels. */
  channels?: string[] | null | undefined;
  tags?: string[] | null | undefined;
  /** When the payload goes, if sooner than the retention period. */
  payloadExpiresAt?: number | null | undefined;
  /** The W3C trace context the message's attempts descend from (src/domain/trace-context.ts). */
  traceparent?: string | null | undefined;
  tracestate?: string | null | undefined;
  /** When its deliveries' first attempts are due (checked against HERALD_MAX_DELIVER_AHEAD); absent, null or past: now. */
  deliverAt?: number | null | undefined;
}

export type EmitResult =
  | {
      ok: true;
      message: MessageRow;
      deliveryIds: string[];
      idempotent: boolean;
      /** Endpoints that got a delivery without their filter applied: the message's filter budget ran out. */
      unfiltered?: number;
    }
  | { ok: false; reason: 'app_not_found' | 'unknown_event_type' | 'event_id_taken' };

export interface MessageFilter {
  appId?: string | undefined;
  /** Messages with this channel, or this tag, among theirs. */
  channel?: string | undefined;
  tag?: string | undefined;
  eventType?: string | undefined;
  /** Any of these event types. */
  eventTypes?: string[] | undefined;
  /** Created before or after these times (milliseconds), either end excluded. */
  before?: number | undefined;
  after?: number | undefined;
}

export interface MessagePolicy {
  retryScheduleMs: number[];
  idempotencyTtlMs: number;
  /** Steps one message's content filters may take together (HERALD_FILTER_BUDGET). */
  filterBudget: number;
}

/**
 * Most payload characters in one emit batch: what a batch holds in memory, and on PostgreSQL one JSON
 * parameter (escaping can double it; a JavaScript string holds at most ~512 M characters).
 */
const EMIT_BATCH_PAYLOAD_CHARS = 16 * 1024 * 1024;

/** An endpoint as fan-out needs it. */
type SubscriberRow = Pick<
  EndpointRow,
  'id' | 'app_id' | 'status' | 'event_types' | 'ordering' | 'channels' | 'filter' | 'retry_schedule'
>;

/** Names as a JSON list column: none (null or empty) as null. */
const namesText = (names: readonly string[] | null | undefined): string | null =>
  names && names.length > 0 ? JSON.stringify(names) : null;

/** SQLite: the least time between two emit transactions under load (why: GroupCommit's `minSpacingMs`). */
const SQLITE_EMIT_SPACING_MS = 2;

/** A name within its environment as one map key; from a request's scope or from a row's columns, alike. */
const scopeKey = (scope: Scope, part: string) => rowKey({ org_id: scope.orgId, livemode: liveFlag(scope) }, part);
const rowKey = (row: { org_id: string; livemode: number }, part: string) => `${row.org_id}|${row.livemode}|${part}`;

/**
 * When a new delivery's first attempt is due: after the first delay of its endpoint's schedule (or the
 * service's), and not before the message's deliver_at.
 */
function firstRunAt(
  endpoint: Pick<EndpointRow, 'retry_schedule'>,
  serviceScheduleMs: number[],
  now: number,
  deliverAt: number | null,
): number {
  const schedule = endpoint.retry_schedule === null ? serviceScheduleMs : scheduleMs(endpoint.retry_schedule)!;
  return Math.max(now + (scheduledDelay(schedule, 0) ?? 0), deliverAt ?? 0);
}

/** A stored payload is shown while it is not past its own expiry (retention may keep it longer for an attempt). */
const readable = (row: { expires_at: number | null }, now: number) => row.expires_at === null || row.expires_at > now;

export class Messages {
  private readonly emits: GroupCommit<EmitRequest, EmitResult>;

  constructor(
    private readonly ctx: StoreContext,
    private readonly policy: MessagePolicy,
    private readonly onQueued: () => void,
  ) {
    // SQLite has one writer, so one batch at a time; PostgreSQL takes a few in parallel.
    const sqlite = ctx.dialect === 'sqlite';
    this.emits = new GroupCommit((batch) => this.emitBatch(batch), {
      maxParallel: sqlite ? 1 : 4,
      minSpacingMs: sqlite ? SQLITE_EMIT_SPACING_MS : 0,
      sizeOf: (request) => request.payloadJson.length,
      maxBatchSize: EMIT_BATCH_PAYLOAD_CHARS,
    });
  }

  /**
   * Emits one message. Concurrent calls are written together (group commit: one transaction on SQLite,
   * one write statement on PostgreSQL). An event id that a concurrent emit took between this one's check
   * and its write fails the write (message_event_ids' key; the group commit then writes each request alone):
   * that is the event id taken, as the check would have said.
   */
  async emit(request: EmitRequest): Promise<EmitResult> {
    try {
      return await this.emits.submit(request);
    } catch (error) {
      if (request.eventId && isUniqueViolation(error)) return { ok: false, reason: 'event_id_taken' };
      throw error;
    }
  }

  private async emitBatch(requests: EmitRequest[]): Promise<EmitResult[]> {
    const now = this.ctx.now();
    // SQLite writes a batch with several statements, and its one transaction is the group commit.
    // PostgreSQL writes a batch's rows with one statement (insertTogether), atomic by itself, and its
    // reads see committed rows at read committed with or without a transaction: a batch needs one only
    // for idempotency keys (a key taken must not outlive a write that failed).
    const needsTransaction = this.ctx.dialect === 'sqlite' || requests.some((r) => r.idempotencyKey !== null);
    const results = needsTransaction
      ? await this.ctx.db.transaction().execute((trx) => this.emitWith(trx, requests, now))
      : await this.emitWith(this.ctx.db, requests, now);
    if (results.some((r) => r.ok && !r.idempotent && r.deliveryIds.length > 0)) this.onQueued();
    return results;
  }

  private async emitWith(db: Executor, requests: EmitRequest[], now: number): Promise<EmitResult[]> {
    const results: (EmitResult | undefined)[] = new Array(requests.length);
    const prior = await this.priorEmits(db, requests, now);
    const pending: number[] = [];
    requests.forEach((request, i) => {
      const earlier =
        request.idempotencyKey === null ? undefined : prior.get(scopeKey(request.scope, request.idempotencyKey));
      if (earlier) results[i] = earlier;
      else pending.push(i);
    });

    const pendingRequests = pending.map((i) => requests[i]!);
    // Independent reads: on PostgreSQL outside a transaction they go on two connections at once.
    const [{ apps, endpoints }, unknownTypes, takenEventIds] = await Promise.all([
      this.appsWithEndpoints(
        db,
        pendingRequests.map((r) => ({ scope: r.scope, name: r.appId })),
      ),
      this.unknownEventTypes(db, pendingRequests),
      this.takenEventIds(db, pendingRequests),
    ]);
    const accepted: { index: number; message: MessageRow }[] = [];
    const claimedKeys = new Map<string, number>();
    for (const i of pending) {
      const request = requests[i]!;
      if (!apps.has(scopeKey(request.scope, request.appId))) {
        results[i] = { ok: false, reason: 'app_not_found' };
        continue;
      }
      if (unknownTypes.has(scopeKey(request.scope, request.eventType))) {
        results[i] = { ok: false, reason: 'unknown_event_type' };
        continue;
      }
      // An event id taken before, or by an earlier request of this batch.
      if (request.eventId) {
        const key = scopeKey(request.scope, `event:${request.eventId}`);
        if (takenEventIds.has(key)) {
          results[i] = { ok: false, reason: 'event_id_taken' };
          continue;
        }
        takenEventIds.add(key);
      }
      // Two requests with one key in the same batch: the first creates, the second repeats it.
      if (request.idempotencyKey !== null) {
        const key = scopeKey(request.scope, request.idempotencyKey);
        if (claimedKeys.has(key)) continue;
        claimedKeys.set(key, i);
      }
      const message: MessageRow = {
        id: newId('message', now),
        org_id: request.scope.orgId,
        livemode: liveFlag(request.scope),
        app_id: apps.get(scopeKey(request.scope, request.appId))!,
        event_type: request.eventType,
        event_id: request.eventId ?? null,
        channels: namesText(request.channels),
        tags: namesText(request.tags),
        traceparent: request.traceparent ?? null,
        tracestate: request.tracestate ?? null,
        deliver_at: request.deliverAt != null && request.deliverAt > now ? request.deliverAt : null,
        created_at: now,
      };
      accepted.push({ index: i, message });
    }

    const lostRaces = await this.claimIdempotencyKeys(
      db,
      accepted.map(({ index, message }) => ({ index, request: requests[index]!, message })),
      now,
    );
    const created = accepted.filter(({ index }) => !lostRaces.has(index));
    for (const { index } of accepted) {
      if (lostRaces.has(index)) results[index] = lostRaces.get(index);
    }

    const messages = created.map((c) => c.message);
    const payloads = new Map(created.map(({ index, message }) => [message.id, requests[index]!.payloadJson]));
    const fanned = this.plannedDeliveries(messages, endpoints, now, (id) => payloads.get(id));
    await insertTogether(db, this.ctx.dialect, [
      { table: 'messages', rows: messages },
      {
        table: 'payloads',
        rows: created.map(({ index, message }) => ({
          message_id: message.id,
          body: requests[index]!.payloadJson,
          created_at: now,
          expires_at: requests[index]!.payloadExpiresAt ?? null,
        })),
      },
      { table: 'deliveries', rows: fanned.deliveries },
      {
        table: 'message_event_ids',
        rows: messages.flatMap((message) =>
          message.event_id === null
            ? []
            : [
                {
                  org_id: message.org_id,
                  livemode: message.livemode,
                  event_id: message.event_id,
                  message_id: message.id,
                },
              ],
        ),
      },
    ]);
    for (const { index, message } of created) {
      results[index] = {
        ok: true,
        message,
        deliveryIds: fanned.idsByMessage.get(message.id) ?? [],
        idempotent: false,
        unfiltered: fanned.unfiltered.get(message.id) ?? 0,
      };
    }
    await this.recordDeliveryIds(
      db,
      created.map(({ index, message }) => ({ request: requests[index]!, message })),
      fanned.idsByMessage,
    );

    // Requests that repeated a key first seen in this batch get that emit's result.
    requests.forEach((request, i) => {
      if (results[i] || request.idempotencyKey === null) return;
      const first = results[claimedKeys.get(scopeKey(request.scope, request.idempotencyKey))!];
      results[i] = first?.ok ? { ...first, idempotent: true } : first;
    });
    return results as EmitResult[];
  }

  /** Results of earlier emits whose idempotency key is still within its window. */
  private async priorEmits(db: Executor, requests: EmitRequest[], now: number): Promise<Map<string, EmitResult>> {
    const keyed = requests.filter((r) => r.idempotencyKey !== null);
    const found = new Map<string, EmitResult>();
    if (keyed.length === 0) return found;
    const rows = await this.priorEmitsQuery(db, keyed, now).execute();
    for (const row of rows) {
      found.set(rowKey(row, row.key), {
        ok: true,
        message: {
          id: row.id,
          org_id: row.org_id,
          livemode: row.livemode,
          app_id: row.app_id,
          event_type: row.event_type,
          event_id: row.event_id,
          channels: row.channels,
          tags: row.tags,
          traceparent: row.traceparent,
          tracestate: row.tracestate,
          deliver_at: row.deliver_at,
          created_at: row.created_at,
        },
        deliveryIds: parseJsonList(row.delivery_ids),
        idempotent: true,
      });
    }
    return found;
  }

  /** The earlier emits holding the keys of `keyed` (requests with a key), with their messages. */
  priorEmitsQuery(db: Executor, keyed: EmitRequest[], now: number) {
    return (
      db
        .selectFrom('idempotency_keys')
        .innerJoin('messages', 'messages.id', 'idempotency_keys.message_id')
        .select([
          'idempotency_keys.org_id',
          'idempotency_keys.livemode',
          'idempotency_keys.key',
          'idempotency_keys.delivery_ids',
          'messages.id',
          'messages.app_id',
          'messages.event_type',
          'messages.event_id',
          'messages.channels',
          'messages.tags',
          'messages.traceparent',
          'messages.tracestate',
          'messages.deliver_at',
          'messages.created_at',
        ])
        // The exact (scope, key) pairs, so each is one lookup of the primary key: the key alone would read
        // every unexpired key, and separate lists of organizations and keys all of a scope's keys while
        // PostgreSQL has no statistics on the table.
        .where(
          sql<boolean>`(${sql.ref('idempotency_keys.org_id')}, ${sql.ref('idempotency_keys.livemode')}, ${sql.ref('idempotency_keys.key')}) in (values ${sql.join(
            [...new Map(keyed.map((r) => [scopeKey(r.scope, r.idempotencyKey!), r])).values()].map(
              (r) => sql`(${r.scope.orgId}, cast(${liveFlag(r.scope)} as integer), ${r.idempotencyKey})`,
            ),
          )})`,
        )
        .where('idempotency_keys.expires_at', '>', now)
    );
  }

  /**
   * Takes the idempotency keys of the accepted emits. A key that another process took meanwhile (a
   * unique-constraint race) is not ours: that emit becomes a repeat of the winner. Returns those repeats.
   */
  private async claimIdempotencyKeys(
    db: Executor,
    accepted: { index: number; request: EmitRequest; message: MessageRow }[],
    now: number,
  ): Promise<Map<number, EmitResult>> {
    const keyed = accepted.filter((a) => a.request.idempotencyKey !== null);
    const lost = new Map<number, EmitResult>();
    if (keyed.length === 0) return lost;
    const expiresAt = now + this.policy.idempotencyTtlMs;
    const taken = new Set<string>();
    for (const part of chunks(keyed)) {
      const rows = await db
        .insertInto('idempotency_keys')
        .values(
          part.map(({ request, message }) => ({
            org_id: request.scope.orgId,
            livemode: liveFlag(request.scope),
            key: request.idempotencyKey!,
            message_id: message.id,
            delivery_ids: '[]',
            expires_at: expiresAt,
          })),
        )
        .onConflict((oc) =>
          oc
            .columns(['org_id', 'livemode', 'key'])
            .doUpdateSet((eb) => ({
              message_id: eb.ref('excluded.message_id'),
              delivery_ids: eb.ref('excluded.delivery_ids'),
              expires_at: eb.ref('excluded.expires_at'),
            }))
            // Only an expired key may be taken over.
            .where('idempotency_keys.expires_at', '<=', now),
        )
        .returning(['org_id', 'livemode', 'key'])
        .execute();
      for (const row of rows) taken.add(rowKey(row, row.key));
    }
    const losers = keyed.filter(({ request }) => !taken.has(scopeKey(request.scope, request.idempotencyKey!)));
    if (losers.length === 0) return lost;
    const winners = await this.priorEmits(
      db,
      losers.map((l) => l.request),
      now,
    );
    for (const loser of losers) {
      const winner = winners.get(scopeKey(loser.request.scope, loser.request.idempotencyKey!));
      if (!winner) throw new Error('idempotency key held by an emit that is not visible yet; retry');
      lost.set(loser.index, winner);
    }
    return lost;
  }

  /** Stores the delivery ids an emit returned, so a repeat of its key can return the same ids. */
  private async recordDeliveryIds(
    db: Executor,
    created: { request: EmitRequest; message: MessageRow }[],
    deliveryIds: Map<string, string[]>,
  ): Promise<void> {
    for (const { request, message } of created) {
      const ids = deliveryIds.get(message.id) ?? [];
      if (request.idempotencyKey === null || ids.length === 0) continue;
      await db
        .updateTable('idempotency_keys')
        .set({ delivery_ids: JSON.stringify(ids) })
        .where('org_id', '=', request.scope.orgId)
        .where('livemode', '=', liveFlag(request.scope))
        .where('key', '=', request.idempotencyKey)
        .execute();
    }
  }

  /**
   * The applications named (by id or uid) in their scopes, keyed by scope + id and scope + uid, and all
   * their endpoints in id order: one statement for both. The hidden application of operational endpoints
   * is found only with `operational` (a replay of an operational message); nobody emits to it.
   */
  private async appsWithEndpoints(
    db: Executor,
    named: { scope: Scope; name: string }[],
    operational = false,
  ): Promise<{ apps: Map<string, string>; endpoints: SubscriberRow[] }> {
    const apps = new Map<string, string>();
    const endpoints: SubscriberRow[] = [];
    if (named.length === 0) return { apps, endpoints };
    const names = [...new Set(named.map((n) => n.name))];
    const rows = await db
      .selectFrom('applications')
      .leftJoin('endpoints', 'endpoints.app_id', 'applications.id')
      .select([
        'applications.id as app_id',
        'applications.uid',
        'applications.org_id',
        'applications.livemode',
        'endpoints.id',
        'endpoints.status',
        'endpoints.event_types',
        'endpoints.ordering',
        'endpoints.channels',
        'endpoints.filter',
        'endpoints.retry_schedule',
      ])
      .where('applications.org_id', 'in', [...new Set(named.map((n) => n.scope.orgId))])
      .where('applications.operational', operational ? '>=' : '=', 0)
      .where((eb) => eb.or([eb('applications.id', 'in', names), eb('applications.uid', 'in', names)]))
      .orderBy('endpoints.id')
      .execute();
    for (const row of rows) {
      apps.set(rowKey(row, row.app_id), row.app_id);
      if (row.uid !== null) apps.set(rowKey(row, row.uid), row.app_id);
      if (row.id !== null)
        endpoints.push({
          id: row.id,
          app_id: row.app_id,
          status: row.status!,
          event_types: row.event_types!,
          ordering: row.ordering!,
          channels: row.channels,
          filter: row.filter,
          retry_schedule: row.retry_schedule,
        });
    }
    return { apps, endpoints };
  }

  /** Scope + `event:` id of every requested event id a message of its environment has already. */
  private async takenEventIds(db: Executor, requests: EmitRequest[]): Promise<Set<string>> {
    const ids = [...new Set(requests.flatMap((r) => (r.eventId ? [r.eventId] : [])))];
    if (ids.length === 0) return new Set();
    const rows = await db
      .selectFrom('message_event_ids')
      .select(['org_id', 'livemode', 'event_id'])
      .where('org_id', 'in', [...new Set(requests.map((r) => r.scope.orgId))])
      .where('event_id', 'in', ids)
      .execute();
    return new Set(rows.map((r) => rowKey(r, `event:${r.event_id}`)));
  }

  /** Scope + name of every requested event type that is not in its environment's catalog. */
  private async unknownEventTypes(db: Executor, requests: EmitRequest[]): Promise<Set<string>> {
    if (requests.length === 0) return new Set();
    const rows = await db
      .selectFrom('event_types')
      .select(['org_id', 'livemode', 'name'])
      .where('org_id', 'in', [...new Set(requests.map((r) => r.scope.orgId))])
      .where('name', 'in', [...new Set(requests.map((r) => r.eventType))])
      .execute();
    const known = new Set(rows.map((r) => rowKey(r, r.name)));
    return new Set(requests.map((r) => scopeKey(r.scope, r.eventType)).filter((key) => !known.has(key)));
  }

  /**
   * One delivery per endpoint of the message's application subscribed to its event type, with its first
   * attempt queued; an endpoint that is disabled gets a `disabled` delivery and no attempt.
   */
  private plannedDeliveries(
    messages: MessageRow[],
    endpoints: SubscriberRow[],
    now: number,
    /** A message's payload JSON, for content filters. */
    payloadOf: (messageId: string) => string | undefined,
    /** Whether a message's deliver_at holds its first attempts (an emit), or they go now (a replay). */
    held = true,
  ): {
    deliveries: NewDeliveryRow[];
    /** How many of them have an attempt queued (those to an endpoint not disabled). */
    queued: number;
    idsByMessage: Map<string, string[]>;
    /** Per message, the endpoints whose filter its budget could not pay for (they receive it). */
    unfiltered: Map<string, number>;
  } {
    const idsByMessage = new Map<string, string[]>();
    const unfiltered = new Map<string, number>();
    const deliveries: NewDeliveryRow[] = [];
    let queued = 0;
    for (const message of messages) {
      const ids: string[] = [];
      const envelope = envelopeOnce(message, () => payloadOf(message.id));
      const budget = new FilterBudget(this.policy.filterBudget);
      for (const endpoint of endpoints) {
        if (endpoint.app_id !== message.app_id || !receives(endpoint, message, envelope, budget)) continue;
        // A FIFO endpoint's new delivery waits, parked, until the ones before it have settled (fifo.ts).
        const runAt = firstRunAt(endpoint, this.policy.retryScheduleMs, now, held ? message.deliver_at : null);
        const made = book.firstAttempt(message, endpoint, runAt, now, endpoint.ordering === 'fifo');
        deliveries.push(made.delivery);
        ids.push(made.delivery.id);
        if (made.queued) queued++;
      }
      idsByMessage.set(message.id, ids);
      if (budget.unapplied > 0) unfiltered.set(message.id, budget.unapplied);
    }
    return { deliveries, queued, idsByMessage, unfiltered };
  }

  /**
   * A message to one endpoint only, whatever it subscribes to (Svix's send-example: an event type's example
   * sent to try an endpoint): the message, its payload and the one delivery, written together.
   */
  async sendTo(
    scope: Scope,
    endpoint: Pick<EndpointRow, 'id' | 'app_id' | 'status' | 'ordering' | 'retry_schedule'>,
    eventType: string,
    payloadJson: string,
  ): Promise<MessageRow> {
    const now = this.ctx.now();
    const message: MessageRow = {
      id: newId('message', now),
      org_id: scope.orgId,
      livemode: liveFlag(scope),
      app_id: endpoint.app_id,
      event_type: eventType,
      event_id: null,
      channels: null,
      tags: null,
      traceparent: null,
      tracestate: null,
      deliver_at: null,
      created_at: now,
    };
    const runAt = firstRunAt(endpoint, this.policy.retryScheduleMs, now, null);
    const { delivery, queued } = book.firstAttempt(message, endpoint, runAt, now, endpoint.ordering === 'fifo');
    await insertTogether(this.ctx.db, this.ctx.dialect, [
      { table: 'messages', rows: [message] },
      { table: 'payloads', rows: [{ message_id: message.id, body: payloadJson, created_at: now, expires_at: null }] },
      { table: 'deliveries', rows: [delivery] },
    ]);
    if (queued) this.onQueued();
    return message;
  }

  /** New deliveries of an existing message for the endpoints subscribed now. */
  async replay(scope: Scope, id: string): Promise<string[] | undefined> {
    // One transaction, so that on SQLite no endpoint changes between the read and the write.
    const ids = await this.ctx.db.transaction().execute(async (trx) => {
      await beforeRevival(trx, this.ctx.dialect);
      const message = await this.getWith(trx, scope, id);
      if (!message) return undefined;
      const { endpoints } = await this.appsWithEndpoints(trx, [{ scope, name: message.app_id }], true);
      // The payload is read only when a content filter needs it, within the transaction: on SQLite a read
      // on another connection would wait for this transaction's, which waits for the read.
      const payloadJson = endpoints.some((e) => e.filter !== null) ? await this.payload(message.id, trx) : undefined;
      const { deliveries, idsByMessage } = this.plannedDeliveries(
        [message],
        endpoints,
        this.ctx.now(),
        () => payloadJson,
        false,
      );
      await insertTogether(trx, this.ctx.dialect, [{ table: 'deliveries', rows: deliveries }]);
      return idsByMessage.get(message.id) ?? [];
    });
    if (ids && ids.length > 0) this.onQueued();
    return ids;
  }

  /** The environment's messages among these ids. */
  async getMany(scope: Scope, ids: readonly string[]): Promise<MessageRow[]> {
    if (ids.length === 0) return [];
    return this.ctx.db
      .selectFrom('messages')
      .selectAll()
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope))
      .where('id', 'in', [...ids])
      .execute();
  }

  async get(scope: Scope, id: string): Promise<MessageRow | undefined> {
    return this.getWith(this.ctx.db, scope, id);
  }

  /** A message by its id or the sender's event id. */
  async find(scope: Scope, idOrEventId: string): Promise<MessageRow | undefined> {
    return this.ctx.db
      .selectFrom('messages')
      .selectAll()
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope))
      .where((eb) => eb.or([eb('id', '=', idOrEventId), eb('event_id', '=', idOrEventId)]))
      .executeTakeFirst();
  }

  private async getWith(db: Executor, scope: Scope, id: string): Promise<MessageRow | undefined> {
    return db
      .selectFrom('messages')
      .selectAll()
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope))
      .where('id', '=', id)
      .executeTakeFirst();
  }

  async list(scope: Scope, page: PageRequest, filter: MessageFilter = {}): Promise<Page<MessageRow>> {
    let query = this.ctx.db
      .selectFrom('messages')
      .selectAll()
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope));
    query = filter.appId
      ? query.where('app_id', '=', filter.appId)
      : query.where('app_id', 'not in', hiddenApplication(this.ctx.db, scope));
    if (filter.eventType) query = query.where('event_type', '=', filter.eventType);
    if (filter.channel) query = query.where(listHolds('channels', filter.channel));
    if (filter.tag) query = query.where(listHolds('tags', filter.tag));
    if (filter.eventTypes && filter.eventTypes.length > 0) query = query.where('event_type', 'in', filter.eventTypes);
    // A message's id carries its creation time: the id range leaves out other partitions (PostgreSQL).
    if (filter.before !== undefined)
      query = query.where('created_at', '<', filter.before).where('id', '<', idFloor('message', filter.before + 1));
    if (filter.after !== undefined)
      query = query.where('created_at', '>', filter.after).where('id', '>=', idFloor('message', filter.after));
    if (page.cursor) query = query.where('id', '<', page.cursor);
    return toPage(
      await query
        .orderBy('id', 'desc')
        .limit(page.limit + 1)
        .execute(),
      page.limit,
    );
  }

  /**
   * The payloads reads show of these messages (JSON text), by message id, under readablePayload's rule: one
   * expunged, purged or past its own expiry is missing.
   */
  async readablePayloads(messageIds: readonly string[]): Promise<Map<string, string>> {
    if (messageIds.length === 0) return new Map();
    const rows = await this.ctx.db
      .selectFrom('payloads')
      .select(['message_id', 'body', 'expires_at'])
      .where('message_id', 'in', [...messageIds])
      .execute();
    const now = this.ctx.now();
    return new Map(rows.filter((row) => readable(row, now)).map((row) => [row.message_id, row.body]));
  }

  /**
   * Removes a message's payload now, as retention would: attempts not yet made fail as past retention,
   * and reads show no content. False when there is no such message.
   */
  async expungePayload(scope: Scope, id: string): Promise<boolean> {
    const message = await this.get(scope, id);
    if (!message) return false;
    await this.ctx.db.deleteFrom('payloads').where('message_id', '=', message.id).execute();
    return true;
  }

  /**
   * The payload a read shows (GET /api/v1/messages/{id}/payload): undefined once it is expunged, purged by
   * retention, or past its own expiry (a payload kept past its expiry only for a waiting attempt is not shown).
   * Every read of either surface that shows a payload goes through this rule or readablePayloads.
   */
  async readablePayload(messageId: string): Promise<string | undefined> {
    const row = await this.ctx.db
      .selectFrom('payloads')
      .select(['body', 'expires_at'])
      .where('message_id', '=', messageId)
      .executeTakeFirst();
    return row && readable(row, this.ctx.now()) ? row.body : undefined;
  }

  /** The stored payload, expired or not: what sending and content filters use, never shown to a reader. */
  /** A message's stored payload; `db` is the transaction a caller reads it within (SQLite has one connection). */
  async payload(messageId: string, db: Executor = this.ctx.db): Promise<string | undefined> {
    const row = await db.selectFrom('payloads').select('body').where('message_id', '=', messageId).executeTakeFirst();
    return row?.body;
  }
}
