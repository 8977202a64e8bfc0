import { newId } from '../domain/ids.js';
import { liveFlag, toPage, type Executor, type Page, type PageRequest, type Scope, type StoreContext } from './common.js';
import type { AttemptRow, DeliveryRow } from './schema.js';

export interface DeliveryFilter {
  messageId?: string | undefined;
  endpointId?: string | undefined;
  appId?: string | undefined;
  status?: string | undefined;
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
    if (filter.status) query = query.where('status', '=', filter.status);
    if (page.cursor) query = query.where('id', '<', page.cursor);
    return toPage(await query.orderBy('id', 'desc').limit(page.limit + 1).execute(), page.limit);
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
      // Two retries of one delivery take turns (PostgreSQL; SQLite writes one at a time): each numbers its
      // attempt after the other's.
      if (this.ctx.dialect === 'postgres') read = read.forUpdate();
      const delivery = await read.executeTakeFirst();
      if (!delivery) return undefined;
      const now = this.ctx.now();
      // After every attempt made or still queued. A queued attempt that was dropped (its endpoint
      // disabled or deleted, the delivery delivered meanwhile) held a number: it is handed out again, so
      // the numbers the attempts show have no gaps.
      const number = (await highestAttemptNumber(trx, id)) + 1;
      await trx.updateTable('deliveries').set({ attempt_seq: number, next_attempt_at: now, updated_at: now }).where('id', '=', id).execute();
      await trx
        .insertInto('delivery_tasks')
        .values({ id: newId('task', now), delivery_id: id, endpoint_id: delivery.endpoint_id, trigger: 'manual', attempt_number: number, run_at: now, lease_owner: null })
        .execute();
      return number;
    });
    if (attemptNumber !== undefined) this.onQueued();
    return attemptNumber;
  }
}

/** The highest attempt number a delivery's attempts carry, made or queued (0 when none). */
async function highestAttemptNumber(db: Executor, deliveryId: string): Promise<number> {
  const made = await db.selectFrom('attempts').select((eb) => eb.fn.max('attempt_number').as('n')).where('delivery_id', '=', deliveryId).executeTakeFirst();
  const queued = await db.selectFrom('delivery_tasks').select((eb) => eb.fn.max('attempt_number').as('n')).where('delivery_id', '=', deliveryId).executeTakeFirst();
  return Math.max(Number(made?.n ?? 0), Number(queued?.n ?? 0));
}
