import { CompiledQuery, sql } from 'kysely';
import type { DeliveryState, PlannedAttempt } from '../../domain/outcome-plan.js';
import { chunks, type Executor } from '../common.js';
import type { AttemptInput, ClaimedTask, ClaimScope } from './types.js';
import { deliveryStatesById, QueueDriver } from './driver.js';
import { CLAIMED_PAYLOAD_LIMIT, loadInputs } from './inputs.js';
import { FIRST_ATTEMPT_COLUMNS } from './columns.js';

/** writeFirsts' statement text by the fields it sets (a handful of shapes: the plan's changes of a success). */
const FIRST_TEXTS = new Map<string, string>();

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

  /**
   * One update per delivery, its text made once per set of fields: SQLite keeps it prepared (db.ts), and
   * binding a row's values costs less than building and parsing them as JSON.
   */
  protected async writeFirsts(
    trx: Executor,
    fields: Record<string, unknown>,
    attemptsAdded: number,
    firsts: readonly PlannedAttempt[],
  ) {
    const names = Object.keys(fields);
    const key = names.join(',');
    let text = FIRST_TEXTS.get(key);
    if (text === undefined) {
      const set = [
        ...names.map((name) => `"${name}" = ?`),
        '"attempt_count" = "attempt_count" + ?',
        ...FIRST_ATTEMPT_COLUMNS.map(([column]) => `"${column}" = ?`),
      ];
      text = `update "deliveries" set ${set.join(', ')} where "id" = ?`;
      FIRST_TEXTS.set(key, text);
    }
    const common = [...names.map((name) => fields[name]), attemptsAdded];
    for (const first of firsts)
      await trx.executeQuery(
        CompiledQuery.raw(text, [
          ...common,
          ...FIRST_ATTEMPT_COLUMNS.map(([, from]) => first[from]),
          first.delivery_id,
        ]),
      );
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
