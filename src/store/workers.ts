import { book } from './queue/index.js';
import { type RaisePolicy, raiseStoredEvents } from './operational.js';
import type { StoreContext } from './common.js';

/**
 * What the heartbeat of a delivery worker needs from the store (src/delivery/heartbeat.ts): the store's
 * `Workers`, or on the embedded store in the `worker` role the QueueThread, whose connection it uses.
 */
export interface WorkerRegistry {
  /** Records that `owner` is alive now (its row is made on the first beat). */
  beat(owner: string): Promise<void>;
  /**
   * Hands back the claimed attempts of every worker whose last beat is older than `deadAfterMs`, so they
   * are due again at once, and forgets those workers. Returns how many attempts were handed back.
   */
  reapDead(deadAfterMs: number): Promise<number>;
  /** Removes `owner`'s row (a worker that stops cleanly has released what it held). */
  forget(owner: string): Promise<void>;
  /**
   * Raises operational events that outcomes stored and nobody raised yet (their worker stopped between
   * the commit and the raise, or the raise failed), a bounded number per call. Returns how many attempts
   * of operational webhooks that queued.
   */
  raiseStoredEvents(): Promise<number>;
}

/**
 * The `workers` table: one row per running delivery worker with the time of its last beat. A worker that
 * dies stops beating; any live worker then hands its claimed attempts back, in seconds instead of at the
 * end of their lease (HERALD_LEASE, a minute or more). A live worker keeps beating however long its
 * attempts take, so its slow attempts are never taken from it.
 */
export class Workers implements WorkerRegistry {
  constructor(
    private readonly ctx: StoreContext,
    private readonly raise: RaisePolicy,
  ) {}

  async beat(owner: string): Promise<void> {
    const now = this.ctx.now();
    await this.ctx.db
      .insertInto('workers')
      .values({ id: owner, started_at: now, beat_at: now })
      .onConflict((oc) => oc.column('id').doUpdateSet({ beat_at: now }))
      .execute();
  }

  async reapDead(deadAfterMs: number): Promise<number> {
    const now = this.ctx.now();
    const cutoff = now - deadAfterMs;
    // The workers table holds a row per live worker: reading it every beat costs nothing, while the
    // update below reads the claimed part of the task index, so it runs only when someone died.
    const dead = await this.ctx.db.selectFrom('workers').select('id').where('beat_at', '<', cutoff).execute();
    if (dead.length === 0) return 0;
    return this.ctx.db.transaction().execute(async (trx) => {
      const released = await book.releaseSilentWorkers(trx, cutoff, now);
      await trx.deleteFrom('workers').where('beat_at', '<', cutoff).execute();
      return released;
    });
  }

  async forget(owner: string): Promise<void> {
    await this.ctx.db.deleteFrom('workers').where('id', '=', owner).execute();
  }

  raiseStoredEvents(): Promise<number> {
    return raiseStoredEvents(this.ctx.db, this.raise, this.ctx.now());
  }
}
