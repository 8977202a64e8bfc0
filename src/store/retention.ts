import type { StoreContext } from './common.js';

export interface PurgeCounts {
  payloads: number;
  attempts: number;
  deliveries: number;
  messages: number;
  idempotencyKeys: number;
}

/**
 * Removes what is older than the retention period: payloads, attempt history, settled deliveries and
 * their messages, and idempotency keys past their window. A delivery still waiting for an attempt is
 * kept with its message and payload, so nothing in flight is lost.
 */
export async function purgeExpired(ctx: StoreContext, retentionMs: number): Promise<PurgeCounts> {
  const now = ctx.now();
  const cutoff = now - retentionMs;
  const db = ctx.db;
  const inFlight = db.selectFrom('deliveries').select('message_id').where('status', '=', 'pending').where('created_at', '<', cutoff);
  const count = (r: { numDeletedRows: bigint }) => Number(r.numDeletedRows);
  return db.transaction().execute(async (trx) => ({
    attempts: count(await trx.deleteFrom('attempts').where('created_at', '<', cutoff).executeTakeFirst()),
    payloads: count(await trx.deleteFrom('payloads').where('created_at', '<', cutoff).where('message_id', 'not in', inFlight).executeTakeFirst()),
    deliveries: count(await trx.deleteFrom('deliveries').where('created_at', '<', cutoff).where('status', '!=', 'pending').executeTakeFirst()),
    messages: count(await trx.deleteFrom('messages').where('created_at', '<', cutoff).where('id', 'not in', inFlight).executeTakeFirst()),
    idempotencyKeys: count(await trx.deleteFrom('idempotency_keys').where('expires_at', '<=', now).executeTakeFirst()),
  }));
}
