import { newId } from '../domain/ids.js';
import {
  liveFlag,
  toPage,
  type Executor,
  type Page,
  type PageRequest,
  type Scope,
  type StoreContext,
} from './common.js';
import type { AttemptRow, DeliveryRow } from './schema.js';
import type { DeliveryStatus } from '../domain/states.js';
import { hiddenApplication } from './operational.js';

export interface DeliveryFilter {
  messageId?: string | undefined;
  endpointId?: string | undefined;
  appId?: string | undefined;
  status?: DeliveryStatus | undefined;
}

/** How many recent attempts a delivery read carries. */
export const RECENT_ATTEMPTS = 20;

export class Deliveries {
  constructor(
    private readonly ctx: StoreContext,
    private readonly onQueued: () => void,
  ) {}

  async get(scope: Scope, id: string): Promise<DeliveryRow | undefined> {
    return this.ctx.db
      .selectFrom('deliveries')
      .selectAll()
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope))
      .where('id', '=', id)
      .executeTakeFirst();
  }

  /** The most recent attempts of a delivery, newest first. */
  async recentAttempts(deliveryId: string, limit = RECENT_ATTEMPTS): Promise<AttemptRow[]> {
    return this.ctx.db
      .selectFrom('attempts')
      .selectAll()
      .where('delivery_id', '=', deliveryId)
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
  }

  async list(scope: Scope, page: PageRequest, filter: DeliveryFilter = {}): Promise<Page<DeliveryRow>> {
    let query = this.ctx.db
      .selectFrom('deliveries')
      .selectAll()
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope));
    if (filter.messageId) query = query.where('message_id', '=', filter.messageId);
    if (filter.endpointId) query = query.where('endpoint_id', '=', filter.endpointId);
    if (filter.appId) query = query.where('app_id', '=', filter.appId);
    // Operational deliveries are listed by their message, endpoint or application only.
    else if (!filter.messageId && !filter.endpointId)
      query = query.where('app_id', 'not in', hiddenApplication(this.ctx.db, scope));
    if (filter.status) query = query.where('status', '=', filter.status);
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
   * Queues exactly one manual attempt of a delivery, whatever its status, without touching its retry
   * schedule. Returns the number the attempt will carry, or undefined when there is no such delivery.
   */
  async retry(scope: Scope, id: string): Promise<number | undefined> {
    const attemptNumber = await this.ctx.db.transaction().execute(async (trx) => {
      let read = trx
        .selectFrom('deliveries')
        .select(['id', 'endpoint_id'])
        .where('org_id', '=', scope.orgId)
        .where('livemode', '=', liveFlag(scope))
        .where('id', '=', id);
      // Two retries of one delivery, or a retry and an outcome being recorded, take turns (PostgreSQL;
      // SQLite writes one transaction at a time): each numbers its attempt after the other's.
      if (this.ctx.dialect === 'postgres') read = read.forUpdate();
      const delivery = await read.executeTakeFirst();
      if (!delivery) return undefined;
      const now = this.ctx.now();
      const { number, highest } = await numberManualAttempt(trx, id, this.ctx.dialect);
      await trx
        .updateTable('deliveries')
        .set({ attempt_seq: highest, next_attempt_at: now, updated_at: now })
        .where('id', '=', id)
        .execute();
      await trx
        .insertInto('delivery_tasks')
        .values({
          id: newId('task', now),
          delivery_id: id,
          endpoint_id: delivery.endpoint_id,
          trigger: 'manual',
          attempt_number: number,
          run_at: now,
          lease_owner: null,
        })
        .execute();
      return number;
    });
    if (attemptNumber !== undefined) this.onQueued();
    return attemptNumber;
  }
}

/**
 * The number of a manual attempt queued now, and the highest number the delivery's attempts then carry.
 * Numbers follow the order attempts go out: the manual one goes after every attempt made or under way
 * (and other manual ones queued), and before the scheduled attempt still waiting, which moves one place
 * back. So the attempts read in time order with no gaps, also when the manual attempt delivers and the
 * scheduled one is dropped. A delivery has at most one scheduled attempt queued.
 */
async function numberManualAttempt(
  trx: Executor,
  deliveryId: string,
  dialect: StoreContext['dialect'],
): Promise<{ number: number; highest: number }> {
  // The delivery is locked (retry), so no new scheduled task can appear meanwhile. The waiting one is
  // locked so that no worker claims it while it is renumbered, but without waiting (SKIP LOCKED): a task
  // locked elsewhere is being claimed or deleted, counts as ahead, and keeps its number. Waiting for it
  // could deadlock with an outcome that holds the delivery's lock in turn (a 410 stopping the endpoint's
  // tasks after counting its attempt).
  let waiting = trx
    .selectFrom('delivery_tasks')
    .select('id')
    .where('delivery_id', '=', deliveryId)
    .where('trigger', '=', 'scheduled')
    .where('lease_owner', 'is', null);
  if (dialect === 'postgres') waiting = waiting.forUpdate().skipLocked();
  const waitingIds = (await waiting.execute()).map((row) => row.id);
  const made = await trx
    .selectFrom('attempts')
    .select((eb) => eb.fn.max('attempt_number').as('n'))
    .where('delivery_id', '=', deliveryId)
    .executeTakeFirst();
  let ahead = trx
    .selectFrom('delivery_tasks')
    .select((eb) => eb.fn.max('attempt_number').as('n'))
    .where('delivery_id', '=', deliveryId);
  if (waitingIds.length > 0) ahead = ahead.where('id', 'not in', waitingIds);
  const before = await ahead.executeTakeFirst();
  const number = Math.max(Number(made?.n ?? 0), Number(before?.n ?? 0)) + 1;
  if (waitingIds.length === 0) return { number, highest: number };
  await trx
    .updateTable('delivery_tasks')
    .set({ attempt_number: number + 1 })
    .where('id', 'in', waitingIds)
    .execute();
  return { number, highest: number + 1 };
}
