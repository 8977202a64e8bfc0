import { sql } from 'kysely';
import type { DeliveryState } from '../../domain/outcome-plan.js';
import { chunks, type Executor } from '../common.js';
import type { AttemptInput, ClaimedTask, ClaimScope } from './types.js';
import { deliveryStatesById, QueueDriver } from './driver.js';
import { CLAIMED_PAYLOAD_LIMIT, loadInputs } from './inputs.js';

/**
 * The queue on the embedded SQLite store. SQLite runs one write transaction at a time (each takes the
 * write lock at BEGIN IMMEDIATE, src/store/db.ts), so what a transaction reads stays as read until it
 * commits: no row locks are needed.
 */
export class SqliteQueue extends QueueDriver {
  /** A claim, then the inputs of what it took: two statements (SQLite has no data-modifying CTEs). */
  async claimLoaded(
    owner: string,
    limit: number,
    scope: ClaimScope = {},
  ): Promise<{ task: ClaimedTask; input: AttemptInput | null }[]> {
    const tasks = await this.claim(owner, limit, scope);
    const loaded = await loadInputs(this.ctx.db, this.inputReader(), tasks, CLAIMED_PAYLOAD_LIMIT);
    const inputs = new Map(loaded.map((input) => [input.task.id, input]));
    return tasks.map((task) => ({ task, input: inputs.get(task.id) ?? null }));
  }

  protected claimQuery(owner: string, limit: number, scope: ClaimScope, leaseUntil: number) {
    return this.ctx.db
      .updateTable('deliveries')
      .set({ lease_owner: owner, lease_until: leaseUntil })
      .where('id', 'in', this.dueQuery(limit, scope));
  }

  protected endpointNotAmong(ids: readonly string[]) {
    return sql<boolean>`${sql.ref('endpoint_id')} not in (select value from json_each(${JSON.stringify(ids)}))`;
  }

  protected jsonRows(json: string) {
    return sql`json_each(${json})`;
  }

  protected async lockForOutcomes(): Promise<void> {
    // Nothing to lock: the transaction has the database to itself.
  }

  protected async readDeliveries(trx: Executor, ids: string[]): Promise<Map<string, DeliveryState>> {
    const read = new Map<string, DeliveryState>();
    for (const part of chunks(ids))
      deliveryStatesById(await this.deliveryStates(trx).where('id', 'in', part).execute(), read);
    return read;
  }
}
