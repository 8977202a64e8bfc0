import { newId } from '../domain/ids.js';
import { liveFlag, toPage, type Page, type PageRequest, type Scope, type StoreContext } from './common.js';
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
      const delivery = await trx
        .selectFrom('deliveries')
        .select(['id', 'endpoint_id', 'attempt_seq', 'next_attempt_at'])
        .where('org_id', '=', scope.orgId)
        .where('livemode', '=', liveFlag(scope))
        .where('id', '=', id)
        .executeTakeFirst();
      if (!delivery) return undefined;
      const now = this.ctx.now();
      // Incrementing in SQL keeps numbers unique when two retries race on PostgreSQL.
      const updated = await trx
        .updateTable('deliveries')
        .set((eb) => ({ attempt_seq: eb('attempt_seq', '+', 1), next_attempt_at: now, updated_at: now }))
        .where('id', '=', id)
        .returning('attempt_seq')
        .executeTakeFirstOrThrow();
      await trx
        .insertInto('delivery_tasks')
        .values({
          id: newId('task', now),
          delivery_id: id,
          endpoint_id: delivery.endpoint_id,
          trigger: 'manual',
          attempt_number: updated.attempt_seq,
          run_at: now,
          lease_owner: null,
        })
        .execute();
      return updated.attempt_seq;
    });
    if (attemptNumber !== undefined) this.onQueued();
    return attemptNumber;
  }
}
