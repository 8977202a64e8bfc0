import { sql } from 'kysely';
import type { StoreContext } from './common.js';

export interface PurgeCounts {
  payloads: number;
  attempts: number;
  deliveries: number;
  messages: number;
  idempotencyKeys: number;
}

/** Advisory lock key of the retention purge (any constant unique to Herald). */
const PURGE_LOCK = 0x4845524c; // "HERL"

/**
 * Removes what is older than the retention period: attempt history, settled deliveries, payloads and
 * messages, and idempotency keys past their window. A message with a delivery still to be attempted
 * (pending, or with an attempt queued such as a manual retry) keeps its payload and record, whatever its
 * age: a replay of an old message creates fresh deliveries that still need them.
 */
export async function purgeExpired(ctx: StoreContext, retentionMs: number): Promise<PurgeCounts> {
  const now = ctx.now();
  const cutoff = now - retentionMs;
  const count = (r: { numDeletedRows: bigint }) => Number(r.numDeletedRows);
  return ctx.db.transaction().execute(async (trx) => {
    // Every worker process runs the purge; on PostgreSQL one at a time is enough, and two at once would
    // only block or deadlock each other. The lock ends with the transaction.
    if (ctx.dialect === 'postgres') {
      const lock = await sql<{ got: boolean }>`select pg_try_advisory_xact_lock(${PURGE_LOCK}) as got`.execute(trx);
      if (!lock.rows[0]?.got) return { payloads: 0, attempts: 0, deliveries: 0, messages: 0, idempotencyKeys: 0 };
    }
    const queued = trx.selectFrom('delivery_tasks').select('delivery_tasks.delivery_id');
    const unsettled = trx
      .selectFrom('deliveries')
      .select('deliveries.message_id')
      .where((eb) => eb.or([eb('deliveries.status', '=', 'pending'), eb('deliveries.id', 'in', queued)]));
    const attempts = count(await trx.deleteFrom('attempts').where('created_at', '<', cutoff).executeTakeFirst());
    const deliveries = count(
      await trx.deleteFrom('deliveries').where('created_at', '<', cutoff).where('status', '!=', 'pending').where('id', 'not in', queued).executeTakeFirst(),
    );
    const payloads = count(await trx.deleteFrom('payloads').where('created_at', '<', cutoff).where('message_id', 'not in', unsettled).executeTakeFirst());
    // A message goes once none of its deliveries is left (a recent replay's deliveries keep it readable).
    const messages = count(
      await trx
        .deleteFrom('messages')
        .where('created_at', '<', cutoff)
        .where(({ not, exists, selectFrom }) => not(exists(selectFrom('deliveries').select('deliveries.id').whereRef('deliveries.message_id', '=', 'messages.id'))))
        .executeTakeFirst(),
    );
    const idempotencyKeys = count(await trx.deleteFrom('idempotency_keys').where('expires_at', '<=', now).executeTakeFirst());
    return { payloads, attempts, deliveries, messages, idempotencyKeys };
  });
}
