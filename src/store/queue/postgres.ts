import { sql } from 'kysely';
import type pg from 'pg';
import type { OutcomeTask } from '../../domain/outcome-plan.js';
import type { DeliveryStatus } from '../../domain/states.js';
import type { Executor, StoreContext } from '../common.js';
import type { Endpoints } from '../endpoints.js';
import type { AttemptInput, ClaimedTask, ClaimScope, QueuePolicy } from './types.js';
import { addDeliveryStates, type DeliveriesRead, QueueDriver, type Recorded } from './driver.js';
import { CLAIMED_PAYLOAD_LIMIT, type LoadedRow } from './inputs.js';
import { fastPlan } from './fast-plan.js';
import { claimStatement, completeStatement, type Statement } from './postgres-statements.js';
import { changedBySuccess, deliveredOf, takenTasks } from './statements.js';
import { raiseStoredEvents } from '../operational.js';

/**
 * The queue on PostgreSQL, where several processes' workers and the API write at once.
 *
 * Lock order. Every writer of the store takes the rows it changes in this order: endpoints (in id
 * order), then delivery_tasks, then deliveries. Recording outcomes (record) locks the endpoints whose
 * health it may write first (lockForOutcomes), then deletes its tasks, then locks its deliveries (in id
 * order, readDeliveries); the API disables or deletes an endpoint by writing its row, then stops its tasks
 * and deliveries (stopDeliveries, src/store/endpoints.ts), and deletes an application by locking its
 * endpoints in id order, then the same (src/store/applications.ts). Two writers that need the same rows
 * therefore wait for each other instead of deadlocking. Where a statement must go the other way, it never
 * waits: a claim skips locked tasks; a manual attempt (the queue book's enqueueManual) locks its delivery,
 * then its waiting task with SKIP LOCKED. The one-statement outcome (postgres-statements.ts, COMPLETE)
 * locks in this order too, and writes nothing unless what it locked is as its plan assumed. One exception waits: an outcome
 * that disables an endpoint stops the endpoint's tasks and deliveries (recordHealth, or the statement's
 * stop) after locking its own deliveries; it holds the endpoint's row, which every other writer of that
 * endpoint's rows that waits takes first. Emits only insert (messages, deliveries, tasks), as recording does attempts and next
 * tasks: a new row locks no existing one. Two writers lock other rows alone: an endpoint's create writes
 * its application's row (the count of its endpoints waits on it) and then only inserts; a heartbeat that
 * hands back a dead worker's tasks (src/store/workers.ts) updates tasks and nothing else. A rate counter
 * (`endpoint_rates`) is locked last: an endpoint's or application's delete removes it after the
 * endpoint's tasks and deliveries, and takeStarts reads it and moves it with one statement that locks that row
 * alone, only if it is unchanged.
 */
export class PostgresQueue extends QueueDriver {
  constructor(
    ctx: StoreContext,
    endpoints: Endpoints,
    policy: QueuePolicy,
    onQueued: () => void,
    /** The pool of ctx.db's connections: the hot statements run on it, prepared (postgres-statements.ts). */
    private readonly pool: pg.Pool,
  ) {
    super(ctx, endpoints, policy, onQueued);
  }

  private async run<R extends pg.QueryResultRow>(statement: Statement): Promise<R[]> {
    return (await this.pool.query<R>(statement)).rows;
  }

  /** One statement: the claim is a data-modifying CTE joined to the inputs and the state outcomes plan from. */
  async claimLoaded(
    owner: string,
    limit: number,
    { skip = [], only, dueAfter = 0 }: ClaimScope = {},
  ): Promise<{ task: ClaimedTask; input: AttemptInput | null }[]> {
    const now = this.ctx.now();
    const leaseUntil = now + this.policy.leaseMs;
    const rows = await this.run<ClaimedRow>(
      claimStatement({ owner, leaseUntil, now, dueAfter, limit, skip, only, payloadLimit: CLAIMED_PAYLOAD_LIMIT }),
    );
    const reader = this.inputReader();
    return rows
      .map((row) => {
        const task: ClaimedTask = {
          id: row.id,
          delivery_id: row.delivery_id,
          endpoint_id: row.endpoint_id,
          trigger: row.trigger,
          attempt_number: row.attempt_number,
          run_at: leaseUntil,
          lease_owner: owner,
          leaseUntil,
        };
        const input = reader.toInput(task, row);
        if (input && row.d_status !== null)
          input.claimedState = {
            delivery: {
              status: row.d_status,
              attempt_count: row.attempt_count!,
              schedule_step: row.schedule_step!,
              attempt_seq: row.attempt_seq!,
              tasks: row.d_tasks,
            },
            endpoint:
              row.e_id === null
                ? null
                : { status: row.endpoint_status!, failingSince: row.failing_since, exhaustedAt: row.exhausted_at },
          };
        return { task, input };
      })
      .sort((a, b) => (a.task.id < b.task.id ? -1 : 1));
  }

  protected claimQuery(owner: string, limit: number, scope: ClaimScope, leaseUntil: number) {
    // As the claim statement reads them (postgres-statements.ts): the due ids as an array.
    const due = this.dueQuery(limit, scope).forUpdate().skipLocked();
    return this.ctx.db
      .updateTable('delivery_tasks')
      .set({ run_at: leaseUntil, lease_owner: owner })
      .where(sql<boolean>`${sql.ref('id')} = any(array(${due}))`);
  }

  /** PostgreSQL plans `<> all(array)` as it plans a `not in` list. */
  protected endpointNotAmong(ids: readonly string[]) {
    return sql<boolean>`${sql.ref('endpoint_id')} <> all(${ids}::text[])`;
  }

  /**
   * A batch whose plan can be made from what its claims read (fast-plan.ts: the same state per delivery
   * and endpoint) is written in one statement, which checks that state first, stops what an endpoint it
   * disables had queued, and stores the plan's operational events, raised right after; a batch whose
   * state changed meanwhile is recorded in a transaction that reads first.
   */
  override async completeMany(items: Recorded[], owner: string): Promise<boolean[]> {
    const fast = fastPlan(items, owner, this.policy, this.ctx.now());
    if (fast !== null) {
      const [row] = await this.run<{ ok: boolean }>(completeStatement(fast));
      if (row?.ok) {
        this.batches.oneStatement++;
        if (fast.events.length > 0) await this.raiseStored();
        return items.map(() => true);
      }
    }
    this.batches.transaction++;
    return super.completeMany(items, owner);
  }

  /**
   * Raises the events a batch stored with its outcomes. They are committed: a failure here leaves them
   * stored, and a heartbeat raises them within a beat (Workers.raiseStoredEvents), so it is only a warning.
   */
  private async raiseStored(): Promise<void> {
    try {
      if ((await raiseStoredEvents(this.ctx.db, this.raisePolicy(), this.ctx.now())) > 0) this.onQueued();
    } catch (error) {
      process.emitWarning(`raising stored operational events failed: ${(error as Error)?.message ?? String(error)}`);
    }
  }

  /** Outcome batches written each way since start (the one checked statement, or the transaction). */
  readonly batches = { oneStatement: 0, transaction: 0 };

  /**
   * The endpoints of a batch of outcomes, in id order, before anything else (the lock order above). Their
   * health is read, changed and written back at the end, and two batches recording failures of one
   * endpoint at once must take turns, or the second would write back what it read and undo the first's
   * change (a delivery's exhaustion, which the disabling rule needs).
   */
  protected async lockForOutcomes(trx: Executor, items: Recorded[]): Promise<void> {
    const ids = [...new Set(items.flatMap(({ input }) => (input.endpoint ? [input.endpoint.id] : [])))];
    if (ids.length === 0) return;
    const failed = [
      ...new Set(
        items.filter(({ input, result }) => input.endpoint && !result.ok).map(({ input }) => input.endpoint!.id),
      ),
    ];
    // Only the rows this batch may write: those with a failure here, and those a success would mark healthy.
    // A healthy endpoint with only successes here is left unlocked, or a busy one would make every batch
    // with a failure, in every worker, wait for the others.
    await trx
      .selectFrom('endpoints')
      .select('id')
      .where('id', 'in', ids)
      .where((eb) => (failed.length > 0 ? eb.or([eb('id', 'in', failed), changedBySuccess(eb)]) : changedBySuccess(eb)))
      .orderBy('id')
      .forUpdate()
      .execute();
  }

  protected takeTasks(db: Executor, tasks: readonly OutcomeTask[], owner: string, delivered: ReadonlySet<string>) {
    const deliveredHere = deliveredOf(tasks, delivered);
    // Without table statistics PostgreSQL expects each value of an `in` list to match 0.5% of the rows, so
    // takenTasks' lists alone read the whole task table for a batch of outcomes (100 at 50,000 tasks:
    // ~10 ms). The rows they can match are found first, by primary key from an array (the planner expects
    // 10), and the delivered deliveries' tasks one delivery at a time (`offset 0` keeps the lateral subquery
    // from becoming a join over the whole table); the lists then only filter those rows. This relies on the
    // queue sessions' random_page_cost (db.ts): at 4 a table of a few hundred tasks is read whole again,
    // and the array is not hashed.
    const candidates = sql`select unnest(${tasks.map((task) => task.id)}::text[]) union all
        select t.id from unnest(${deliveredHere}::text[]) as d(id)
        cross join lateral (select id from delivery_tasks where delivery_id = d.id and trigger = 'scheduled' offset 0) as t`;
    return db
      .deleteFrom('delivery_tasks')
      .where((eb) =>
        eb.and([sql<boolean>`id = any(array(${candidates}))`, takenTasks(eb, tasks, owner, deliveredHere)]),
      );
  }

  /**
   * Locks the deliveries in id order (the lock order above) as it reads them: a manual retry of one of
   * them, which locks it too (the queue book's enqueueManual), then numbers its attempt before or after
   * this batch's next, never the same. Found by primary key from an array, whatever the statistics;
   * whether each has a task left through its tasks' delivery_id.
   */
  protected async readDeliveries(trx: Executor, ids: string[]): Promise<DeliveriesRead> {
    const read: DeliveriesRead = { deliveries: new Map(), queued: new Set() };
    if (ids.length === 0) return read;
    const rows = await this.deliveryStates(trx)
      .where(sql<boolean>`${sql.ref('id')} = any(${ids}::text[])`)
      .orderBy('id')
      .forUpdate()
      .execute();
    return addDeliveryStates(read, rows);
  }
}

/** A row of the claim statement. */
interface ClaimedRow extends LoadedRow {
  id: string;
  delivery_id: string;
  endpoint_id: string;
  trigger: ClaimedTask['trigger'];
  attempt_number: number;
  d_status: DeliveryStatus | null;
  attempt_count: number | null;
  schedule_step: number | null;
  attempt_seq: number | null;
  d_tasks: number;
  failing_since: number | null;
  exhausted_at: number | null;
}
