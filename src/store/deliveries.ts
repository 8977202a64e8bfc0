import { CLOCK_SKEW_MS, idFloor, idNotBefore } from '../domain/ids.js';
import { sql } from 'kysely';
import { liveFlag, toPage, type Page, type PageRequest, type Scope, type StoreContext } from './common.js';
import type { AttemptRow, NewDeliveryRow } from './schema.js';
import { book, QUEUE_COLUMNS } from './queue/index.js';
import { beforeRevival } from './partitions/index.js';
import type { DeliveryStatus } from '../domain/states.js';
import { hiddenApplication } from './operational.js';

export interface DeliveryFilter {
  messageId?: string | undefined;
  endpointId?: string | undefined;
  appId?: string | undefined;
  status?: DeliveryStatus | undefined;
  /** Deliveries of messages of this event type. */
  eventType?: string | undefined;
  /** Created at or after `since`, and before `until` (milliseconds). */
  since?: number | undefined;
  until?: number | undefined;
}

/**
 * A delivery as reads show it: its row, its message's event type (null once the message is gone) and when
 * its next attempt is due (the queue's book.nextAttemptAt).
 */
export type DeliveryRead = DeliveryRow & { event_type: string | null };

/** A delivery's own columns as reads show them, with when its next attempt is due. */
export type DeliveryRow = NewDeliveryRow & { next_attempt_at: number | null };

/** The columns a delivery read shows: not its first attempt's (read as an attempt, `attempt_log`). */
const READ_COLUMNS = [
  'id',
  'org_id',
  'livemode',
  'app_id',
  'message_id',
  'endpoint_id',
  'status',
  'attempt_count',
  'attempt_seq',
  'schedule_step',
  'created_at',
  'updated_at',
  ...QUEUE_COLUMNS,
] as const satisfies readonly (keyof NewDeliveryRow)[];

/** How many recent attempts a delivery read carries. */
export const RECENT_ATTEMPTS = 20;

export class Deliveries {
  constructor(
    private readonly ctx: StoreContext,
    private readonly onQueued: () => void,
  ) {}

  async get(scope: Scope, id: string): Promise<DeliveryRead | undefined> {
    const row = await this.row(scope, id);
    return row && (await this.withEventTypes([row]))[0];
  }

  /**
   * A delivery as get() reads it, without its message's event type: for a caller that reads the message
   * anyway (the delivery read), or needs only the delivery's own columns.
   */
  row(scope: Scope, id: string): Promise<DeliveryRow | undefined> {
    return this.read()
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope))
      .where('id', '=', id)
      .executeTakeFirst();
  }

  /** The event types of these messages, read by their ids and the range they span (withEventTypes). */
  eventTypesQuery(messageIds: readonly string[]) {
    const ids = [...new Set(messageIds)].sort();
    return this.ctx.db
      .selectFrom('messages')
      .select(['id', 'event_type'])
      .where('id', 'in', ids)
      .where('id', '>=', ids[0]!)
      .where('id', '<=', ids[ids.length - 1]!);
  }

  /** Deliveries with their next attempt time, read from their tasks. */
  private read() {
    return this.ctx.db
      .selectFrom('deliveries')
      .select(READ_COLUMNS.map((column) => `deliveries.${column}` as const))
      .select(sql<number | null>`${book.nextAttemptAt(this.ctx.now())}`.as('next_attempt_at'));
  }

  /**
   * The rows with their messages' event types, read by the messages' ids in a second statement. As a
   * subquery per row, PostgreSQL would plan it over every partition of messages (a delivery may name a
   * message of any day: a replay's does); by the ids themselves it plans only the partitions that hold them.
   */
  private async withEventTypes(rows: DeliveryRow[]): Promise<DeliveryRead[]> {
    if (rows.length === 0) return [];
    const found = await this.eventTypesQuery(rows.map((row) => row.message_id)).execute();
    const types = new Map(found.map((message) => [message.id, message.event_type]));
    return rows.map((row) => ({ ...row, event_type: types.get(row.message_id) ?? null }));
  }

  /**
   * Each delivery's endpoint and status, of these messages of the environment (read through the index by
   * message): what a list of messages shows of how each went.
   */
  async statusesOf(
    scope: Scope,
    messageIds: readonly string[],
  ): Promise<{ message_id: string; endpoint_id: string; status: DeliveryStatus }[]> {
    if (messageIds.length === 0) return [];
    return this.ctx.db
      .selectFrom('deliveries')
      .select(['message_id', 'endpoint_id', 'status'])
      .where('message_id', 'in', [...messageIds])
      .where('id', '>=', idNotBefore('delivery', [...messageIds].sort()[0]!))
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope))
      .orderBy('id')
      .execute();
  }

  /**
   * The most recent attempts of a delivery, newest first. Its attempts were made between its creation and
   * its last change (each recorded outcome changes it): their ids are read in that range, which on
   * PostgreSQL is the partitions of those days only.
   */
  async recentAttempts(
    delivery: Pick<DeliveryRead, 'id' | 'updated_at'>,
    limit = RECENT_ATTEMPTS,
  ): Promise<AttemptRow[]> {
    return this.recentAttemptsQuery(delivery, limit).execute();
  }

  /** recentAttempts' statement (the partitions it reads are checked in test/postgres/store/partitions.test.ts). */
  recentAttemptsQuery(delivery: Pick<DeliveryRead, 'id' | 'updated_at'>, limit = RECENT_ATTEMPTS) {
    return this.ctx.db
      .selectFrom('attempt_log')
      .selectAll()
      .where('delivery_id', '=', delivery.id)
      .where('id', '>=', idNotBefore('attempt', delivery.id))
      .where('id', '<', idFloor('attempt', delivery.updated_at + CLOCK_SKEW_MS + 1))
      .orderBy('id', 'desc')
      .limit(limit);
  }

  async list(scope: Scope, page: PageRequest, filter: DeliveryFilter = {}): Promise<Page<DeliveryRead>> {
    const found = toPage(await this.listQuery(scope, page, filter).execute(), page.limit);
    return { ...found, items: await this.withEventTypes(found.items) };
  }

  /** list()'s statement for a page, its event types left to withEventTypes (EXPLAINed in test/postgres/store/partitions.test.ts). */
  listQuery(scope: Scope, page: PageRequest, filter: DeliveryFilter = {}) {
    let query = this.read().where('org_id', '=', scope.orgId).where('livemode', '=', liveFlag(scope));
    if (filter.messageId)
      query = query
        .where('message_id', '=', filter.messageId)
        .where('id', '>=', idNotBefore('delivery', filter.messageId));
    if (filter.endpointId) query = query.where('endpoint_id', '=', filter.endpointId);
    if (filter.appId) query = query.where('app_id', '=', filter.appId);
    // Operational deliveries are listed by their message, endpoint or application only.
    else if (!filter.messageId && !filter.endpointId)
      query = query.where('app_id', 'not in', hiddenApplication(this.ctx.db, scope));
    if (filter.status) query = query.where('status', '=', filter.status);
    const { eventType } = filter;
    if (eventType)
      query = query.where((eb) =>
        eb.exists(
          eb
            .selectFrom('messages')
            .select('messages.id')
            .whereRef('messages.id', '=', 'deliveries.message_id')
            .where('messages.event_type', '=', eventType),
        ),
      );
    // A delivery's id carries its creation time: the id range says the same as the times, and on
    // PostgreSQL leaves out the partitions outside it.
    if (filter.since !== undefined)
      query = query
        .where('deliveries.created_at', '>=', filter.since)
        .where('id', '>=', idFloor('delivery', filter.since));
    if (filter.until !== undefined)
      query = query
        .where('deliveries.created_at', '<', filter.until)
        .where('id', '<', idFloor('delivery', filter.until));
    if (page.cursor) query = query.where('id', '<', page.cursor);
    return query.orderBy('id', 'desc').limit(page.limit + 1);
  }

  /** An endpoint's deliveries made in [since, until) counted by status (statuses with none are left out). */
  async countsByStatus(endpointId: string, since: number, until: number): Promise<Map<DeliveryStatus, number>> {
    const rows = await this.ctx.db
      .selectFrom('deliveries')
      .select((eb) => ['status', eb.fn.countAll<number | string>().as('n')])
      .where('endpoint_id', '=', endpointId)
      .where('created_at', '>=', since)
      .where('created_at', '<', until)
      .groupBy('status')
      .execute();
    return new Map(rows.map((row) => [row.status, Number(row.n)]));
  }

  /**
   * Queues exactly one manual attempt of a delivery, whatever its status, without touching its retry
   * schedule (the queue's book.enqueueManual numbers it). Returns the number the attempt will carry, or
   * undefined when there is no such delivery.
   */
  async retry(scope: Scope, id: string): Promise<number | undefined> {
    const attemptNumber = await this.ctx.db.transaction().execute(async (trx) => {
      await beforeRevival(trx, this.ctx.dialect);
      const delivery = await trx
        .selectFrom('deliveries')
        .select('id')
        .where('org_id', '=', scope.orgId)
        .where('livemode', '=', liveFlag(scope))
        .where('id', '=', id)
        .executeTakeFirst();
      if (!delivery) return undefined;
      // Two retries of one delivery, or a retry and an outcome being recorded, take turns on its row
      // (PostgreSQL; SQLite writes one transaction at a time): each numbers its attempt after the other's.
      return (await book.enqueueManual(trx, this.ctx.dialect, [id], this.ctx.now())).get(id);
    });
    if (attemptNumber !== undefined) this.onQueued();
    return attemptNumber;
  }
}
