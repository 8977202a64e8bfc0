import { sql } from 'kysely';
import { attemptRow, FAILING_AFTER, type OutcomeTask } from '../../domain/outcome-plan.js';
import type { Executor } from '../common.js';
import type { AttemptInput, ClaimedTask, ClaimScope } from '../queue.js';
import { addDeliveryStates, type DeliveriesRead, QueueDriver, type Recorded } from './driver.js';
import { CLAIMED_PAYLOAD_LIMIT, inputColumns } from './inputs.js';
import { changedBySuccess, deliveredOf, markHealthy, ownedTasks, takenTasks } from './statements.js';

/** division_by_zero: completeDelivered's statement found a delivery that recovers, and wrote nothing. */
const RECOVERS_HERE = '22012';

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
 * waits: a claim skips locked tasks; a manual retry (src/store/deliveries.ts) locks its delivery, then its
 * waiting task with SKIP LOCKED; completeDelivered, which takes tasks and deliveries before endpoints,
 * locks those with NOWAIT and falls back to record on lock_not_available. One exception waits: an outcome
 * that disables an endpoint stops the endpoint's tasks and deliveries (recordHealth) after locking its own
 * deliveries; it holds the endpoint's row, which every other writer of that endpoint's rows that waits
 * takes first. Emits only insert (messages, deliveries, tasks), as recording does attempts and next
 * tasks: a new row locks no existing one. Two writers lock other rows alone: an endpoint's create writes
 * its application's row (the count of its endpoints waits on it) and then only inserts; a heartbeat that
 * hands back a dead worker's tasks (src/store/workers.ts) updates tasks and nothing else. A rate counter
 * (`endpoint_rates`) is locked last: an endpoint's or application's delete removes it after the
 * endpoint's tasks and deliveries, and takeRate's upsert is one statement that locks that row alone.
 */
export class PostgresQueue extends QueueDriver {
  /**
   * One statement: the claim is a data-modifying CTE joined to the inputs, so a claim costs one round trip
   * instead of two.
   */
  async claimLoaded(
    owner: string,
    limit: number,
    scope: ClaimScope = {},
  ): Promise<{ task: ClaimedTask; input: AttemptInput | null }[]> {
    const leaseUntil = this.ctx.now() + this.policy.leaseMs;
    const rows = await this.claimLoadedQuery(owner, limit, scope, leaseUntil).execute();
    const reader = this.inputReader();
    return rows
      .map((row) => {
        const task: ClaimedTask = {
          id: row.id,
          delivery_id: row.delivery_id,
          endpoint_id: row.endpoint_id,
          trigger: row.trigger,
          attempt_number: row.attempt_number,
          run_at: row.run_at,
          lease_owner: row.lease_owner,
          leaseUntil,
        };
        return { task, input: reader.toInput(task, row) };
      })
      .sort((a, b) => (a.task.id < b.task.id ? -1 : 1));
  }

  /** The claim with its inputs (claimQuery says how its plan stays on the indexes). */
  private claimLoadedQuery(owner: string, limit: number, scope: ClaimScope, leaseUntil: number) {
    return this.ctx.db
      .with('claimed', () => this.claimQuery(owner, limit, scope, leaseUntil).returningAll())
      .selectFrom('claimed')
      .leftJoin('deliveries', 'deliveries.id', 'claimed.delivery_id')
      .leftJoin('messages', 'messages.id', 'deliveries.message_id')
      .leftJoin('payloads', 'payloads.message_id', 'deliveries.message_id')
      .leftJoin('endpoints', 'endpoints.id', 'deliveries.endpoint_id')
      .selectAll('claimed')
      .select(inputColumns(CLAIMED_PAYLOAD_LIMIT));
  }

  protected claimQuery(owner: string, limit: number, scope: ClaimScope, leaseUntil: number) {
    // Workers in other processes skip rows being claimed instead of waiting on them. The due ids are read
    // once, as an array the update finds through the primary key. As `id in (…)` the planner expected
    // `limit` rows (100; a claim takes a dozen or so): it hashed them against a scan of every task row,
    // dead ones included, and (in claimLoadedQuery) read the whole deliveries table to join them to their
    // inputs, per claim, on tables of a few thousand rows. From an array it expects 10.
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
   * A batch of 2xx outcomes only (the common case) is one statement (completeDelivered) unless onOutcomes
   * is set; any other batch, or one whose endpoint is locked, is recorded through the planner.
   */
  override async completeMany(items: Recorded[], owner: string): Promise<boolean[]> {
    if (this.onOutcomes === null && items.length > 0 && items.every(({ result }) => result.ok)) {
      try {
        return await this.completeDelivered(items, owner);
      } catch (error) {
        // An endpoint it would mark healthy was locked by another writer (lock_not_available): the
        // transaction waits its turn, taking the endpoints first as every writer does. A delivery of the
        // batch recovers (RECOVERS_HERE): the planner raises its event with the outcome.
        const code = (error as { code?: string }).code;
        if (code !== '55P03' && code !== RECOVERS_HERE) throw error;
      }
    }
    return super.completeMany(items, owner);
  }

  /**
   * A batch of 2xx outcomes only: what the planner decides for it (outcomePlan), in one statement of
   * data-modifying CTEs, so one round trip instead of a transaction's nine (begin, seven statements,
   * commit); a statement is atomic on its own. Its parts all see the same snapshot: the next attempt left
   * to a delivered delivery is therefore looked up without the tasks the statement itself deletes, and the
   * endpoints are marked healthy only for tasks it found still ours (their `updated_at` is the latest
   * outcome of the batch, ours or not). Batches are at most a few hundred outcomes (GroupCommit), well
   * within PostgreSQL's parameter limit. test/store/queue-contract.test.ts proves it writes what the
   * planned transaction writes.
   */
  private async completeDelivered(items: Recorded[], owner: string): Promise<boolean[]> {
    const rows = (await this.completeDeliveredQuery(items, owner).execute(this.ctx.db)).rows.filter(
      (row): row is typeof row & { id: string; run_at: number } => row.id !== null,
    );
    const owned = ownedTasks(
      items.map(({ input }) => input.task),
      rows,
      owner,
    );
    return items.map(({ input }) => owned.has(input.task.id));
  }

  /** completeDelivered's statement, returning the tasks it deleted. */
  private completeDeliveredQuery(items: Recorded[], owner: string) {
    const db = this.ctx.db;
    const now = this.ctx.now();
    const tasks = items.map(({ input }) => input.task);
    const attempts = db
      .insertInto('attempts')
      .values(items.map(({ input, result }) => attemptRow(input.task, result, owner)))
      .onConflict((oc) => oc.column('id').doNothing())
      .returning('delivery_id');
    // A 2xx of a delivery that announced trouble (announcedTrouble, written here in SQL) is a recovery,
    // whose operational event must be written with it. Such deliveries are rare, so the statement writes
    // no events: `counted` leaves such a delivery alone, and `recovers` fails the statement with
    // division_by_zero when it counted fewer deliveries than the attempts name, undoing all its parts;
    // completeMany then records the batch through the planner. The condition sits in the UPDATE's WHERE,
    // which PostgreSQL evaluates again on the newest version of a row another transaction held (a failure
    // recorded meanwhile), where a check of the statement's snapshot would miss that change. `recovers` has
    // one row, and its `ok` is selected, so the check always runs (a column left out of the result is
    // never computed).
    const announcedTrouble = sql<boolean>`deliveries.status <> 'success' and (deliveries.attempt_count >= ${FAILING_AFTER}
        or (deliveries.status in ('failed', 'pending') and deliveries.schedule_step >= ${this.policy.retryScheduleMs.length}))`;
    const parts = [
      // Only the attempts written now are counted: the same outcomes recorded again change nothing.
      sql`attempts_in as (${attempts})`,
      sql`taken as (${this.takeTasks(db, tasks, owner, new Set(tasks.map((task) => task.delivery_id))).returning(['id', 'lease_owner', 'run_at'])})`,
      sql`counted as (update ${sql.table('deliveries')} set attempt_count = deliveries.attempt_count + c.n, status = 'success',
        updated_at = ${now}
        from (select delivery_id as id, count(*)::int as n from attempts_in group by delivery_id) as c
        where deliveries.id = c.id and not (${announcedTrouble}) returning deliveries.id)`,
    ];
    const healthFrom = items.filter(({ input }) => input.endpoint !== null && input.endpoint.status !== 'disabled');
    if (healthFrom.length > 0) {
      const ours = sql.join(
        healthFrom.map(({ input }) => sql`(${input.task.id}, ${input.task.leaseUntil}::bigint, ${input.endpoint!.id})`),
      );
      // In parentheses: kysely writes a raw expression after `in` as it is.
      const ownedEndpoints = sql<string>`(select e.endpoint_id from (values ${ours}) as e(task_id, lease_until, endpoint_id)
        join taken on taken.id = e.task_id and taken.lease_owner = ${owner} and taken.run_at = e.lease_until)`;
      // Tasks and deliveries come before endpoints here, the reverse of the lock order: an endpoint that
      // needs marking healthy and is locked (being disabled, deleted, or its failure recorded) fails the
      // statement at once (55P03), and completeMany records the batch in a transaction instead. Healthy
      // endpoints are not locked at all.
      const lockedHere = db
        .selectFrom('endpoints')
        .select('id')
        .where('id', 'in', ownedEndpoints)
        .where(changedBySuccess)
        .forUpdate()
        .noWait();
      parts.push(
        sql`healthy as (${markHealthy(db, lockedHere, Math.max(...healthFrom.map(({ result }) => result.at)))})`,
      );
    }
    parts.push(sql`recovers as (select 1 / (case when (select count(*) from counted)
        < (select count(distinct delivery_id) from attempts_in) then 0 else 1 end) as ok)`);
    return sql<{
      ok: number;
      id: string | null;
      lease_owner: string | null;
      run_at: number | null;
    }>`with ${sql.join(parts)} select recovers.ok, taken.id, taken.lease_owner, taken.run_at from recovers left join taken on true`;
  }

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
