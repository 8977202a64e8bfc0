import { sql } from 'kysely';
import type pg from 'pg';
import type { DeliveryState, PlannedAttempt } from '../../domain/outcome-plan.js';
import type { QueueColumns } from '../../domain/queue-slot.js';
import type { DeliveryStatus } from '../../domain/states.js';
import { chunks, type Executor, type StoreContext } from '../common.js';
import type { AttemptInput, ClaimedTask, ClaimScope, QueueDeps, QueuePolicy, Recorded } from './types.js';
import { claimedTask, deliveryState, deliveryStatesById, QueueDriver } from './driver.js';
import { CLAIMED_PAYLOAD_LIMIT, type LoadedRow, loadInputs } from './inputs.js';
import { FIRST_ATTEMPT_COLUMNS } from './columns.js';
import { fastPlan } from './fast-plan.js';
import { type ClaimRanges, claimStatement, completeStatement, type Statement } from './postgres-statements.js';
import { CLOCK_SKEW_MS, idFloor, MAX_ID_TIME } from '../../domain/ids.js';
import { changedBySuccess } from './statements.js';
import { partitioned } from '../partitions/convert.js';
import { partitionsOf } from '../partitions/catalog.js';

/** How often a queue reads again whether the history tables are partitioned (`herald partition` runs online). */
const LAYOUT_READ_MS = 60_000;

/**
 * The queue on PostgreSQL, where several processes' workers and the API write at once.
 *
 * Lock order. Every writer of the store takes the rows it changes in this order: endpoints (in id
 * order), then deliveries. Recording outcomes (record) locks the endpoints whose health it may write
 * first (lockForOutcomes), then holds back a paused endpoint's waiting deliveries, then locks its own
 * deliveries (in id order, readDeliveries); the API disables or deletes an endpoint by writing its row,
 * then stops its deliveries' queues (stopEndpoints, src/store/queue/book.ts), and deletes an application
 * by locking its endpoints in id order, then the same (src/store/applications.ts). Two writers that need
 * the same rows therefore wait for each other instead of deadlocking. A claim never waits: it skips
 * locked deliveries; a manual attempt (the queue book's enqueueManual) locks its deliveries alone, in id
 * order. A hold moves only deliveries no worker holds, so it never waits for a batch's own (held)
 * deliveries. The one-statement outcome (postgres-statements.ts, COMPLETE) locks in this order too, and
 * writes nothing unless what it locked is as its plan assumed. One exception waits: an outcome that
 * disables an endpoint stops the endpoint's deliveries (recordHealth, or the statement's stop) after
 * locking its own; it holds the endpoint's row, which every other writer of that endpoint's rows that
 * waits takes first. Emits only insert (messages, deliveries), as recording does attempts: a new row
 * locks no existing one. Two writers lock other rows alone: an endpoint's create writes its application's
 * row (the count of its endpoints waits on it) and then only inserts; a heartbeat that hands back a dead
 * worker's attempts (src/store/workers.ts) updates deliveries and nothing else. A rate counter
 * (`endpoint_rates`) is locked last: an endpoint's or application's delete removes it after the
 * endpoint's deliveries, and takeStarts reads it and moves it with one statement that locks that row
 * alone, only if it is unchanged.
 */
export class PostgresQueue extends QueueDriver {
  constructor(
    ctx: StoreContext,
    deps: QueueDeps,
    policy: QueuePolicy,
    onQueued: () => void,
    /** The pool of ctx.db's connections: the hot statements run on it, prepared (postgres-statements.ts). */
    private readonly pool: pg.Pool,
  ) {
    super(ctx, deps, policy, onQueued);
  }

  /** Whether the history tables were partitioned when last read (ranged), and when (performance.now()). */
  private layout = { ranged: false, readAt: Number.NEGATIVE_INFINITY, reading: null as Promise<void> | null };

  /**
   * Whether the statements take their rows' id ranges (the tables are partitioned): read before the first
   * statement, then again in the background every LAYOUT_READ_MS. Either form is right on either layout;
   * the other one only costs more, so a layout changed meanwhile costs at most that long.
   */
  private async ranged(): Promise<boolean> {
    const { layout } = this;
    if (layout.reading === null && performance.now() - layout.readAt > LAYOUT_READ_MS) {
      layout.reading = partitioned(this.ctx.db)
        .then(
          (isPartitioned) => {
            layout.ranged = isPartitioned;
            layout.readAt = performance.now();
          },
          // Read again at the next statement; meanwhile the form last read (first: plain tables').
          () => {},
        )
        .finally(() => {
          layout.reading = null;
        });
    }
    if (layout.readAt === Number.NEGATIVE_INFINITY && layout.reading) await layout.reading;
    return layout.ranged;
  }

  /** Where the queued deliveries began when last read (queuedFrom: ms, null for no bound, +Infinity for none). */
  private queued: { from: number | null; read: boolean } = { from: null, read: false };

  /**
   * What a claim on partitioned tables reads (null on plain tables): deliveries from the oldest partition
   * holding a queued one, and never less than the last CLOCK_SKEW_MS (another process's clock may make an
   * id that old now), up to CLOCK_SKEW_MS ahead; their messages from CLOCK_SKEW_MS before that. A whole-queue
   * claim (`whole`: the claim loop makes one every few seconds) reads where the queued deliveries begin
   * again first, so an old delivery queued again (a manual retry, a recovery) waits at most for it, and has
   * no upper end, so a delivery whose id a clock further ahead made is not left for ever either.
   */
  private async claimRanges(now: number, whole: boolean): Promise<ClaimRanges | null> {
    if (!(await this.ranged())) return null;
    if (whole || !this.queued.read) {
      try {
        this.queued = { from: await queuedFrom(this.ctx.db), read: true };
      } catch (error) {
        process.emitWarning(
          `reading where the queued deliveries begin failed: ${(error as Error)?.message ?? String(error)}`,
        );
        // No bound: claims read every partition below their upper end until the next whole-queue claim
        // reads it again (every few seconds), rather than each claim retrying it meanwhile.
        this.queued = { from: null, read: true };
      }
    }
    const lowest = this.lowestQueued(now);
    const highest = whole ? MAX_ID_TIME : now + CLOCK_SKEW_MS;
    return {
      deliveries: {
        from: lowest === null ? '' : idFloor('delivery', lowest),
        to: idFloor('delivery', highest),
      },
      messages: {
        from: lowest === null ? '' : idFloor('message', lowest - CLOCK_SKEW_MS),
        to: idFloor('message', highest),
      },
    };
  }

  /**
   * On partitioned tables, from where the queued deliveries began when a claim last read it (claimRanges),
   * so the idle worker's look ahead leaves out the partitions of settled history; a delivery queued below
   * it since is found by the next whole-queue claim, as a claim's range says.
   */
  override nextDueQuery(excludeEndpoints: readonly string[], since: number) {
    const query = super.nextDueQuery(excludeEndpoints, since);
    const lowest = this.layout.ranged && this.queued.read ? this.lowestQueued(this.ctx.now()) : null;
    return lowest === null ? query : query.where('id', '>=', idFloor('delivery', lowest));
  }

  /**
   * The earliest time a queued delivery's id may carry, as last read: where they began, and never later
   * than CLOCK_SKEW_MS ago (another process's clock may make an id that old now); null: no bound.
   */
  private lowestQueued(now: number): number | null {
    return this.queued.from === null ? null : Math.min(this.queued.from, now - CLOCK_SKEW_MS);
  }

  /** The claim's statement as claimLoaded runs it now (test/postgres/store/partitions.test.ts plans it). */
  async claimOf(
    owner: string,
    limit: number,
    { skip = [], only, dueAfter = 0 }: ClaimScope = {},
  ): Promise<{ statement: Statement; ranges: ClaimRanges | null; leaseUntil: number }> {
    const now = this.ctx.now();
    const leaseUntil = now + this.policy.leaseMs;
    const ranges = await this.claimRanges(now, dueAfter === 0 && only === undefined);
    const params = { owner, leaseUntil, now, dueAfter, limit, skip, only, payloadLimit: CLAIMED_PAYLOAD_LIMIT };
    return { statement: claimStatement(params, ranges), ranges, leaseUntil };
  }

  private async run<R extends pg.QueryResultRow>(statement: Statement): Promise<R[]> {
    return (await this.pool.query<R>(statement)).rows;
  }

  /**
   * One statement: the claim is a data-modifying CTE joined to the inputs and the state outcomes plan from.
   * A claimed delivery whose message lies outside a ranged claim's range (a replay of an old message) has
   * its input read by a second statement, which reads every partition.
   */
  async claimLoaded(
    owner: string,
    limit: number,
    scope: ClaimScope = {},
  ): Promise<{ task: ClaimedTask; input: AttemptInput | null }[]> {
    const { statement, ranges, leaseUntil } = await this.claimOf(owner, limit, scope);
    const rows = await this.run<ClaimedRow>(statement);
    const reader = this.inputReader();
    const claimed = rows.map((row) => ({ row, task: claimedTask(row, leaseUntil) }));
    const unread = claimed.filter(({ row }) => row.m_id === null && ranges && outside(row.message_id, ranges.messages));
    const readApart = new Map(
      (
        await loadInputs(
          this.ctx.db,
          reader,
          unread.map(({ task }) => task),
          CLAIMED_PAYLOAD_LIMIT,
        )
      ).map((input) => [input.task.id, input]),
    );
    return claimed
      .map(({ row, task }) => {
        const input = readApart.get(task.id) ?? reader.toInput(task, row, reader.endpointOf(row));
        if (input)
          input.claimedState = {
            delivery: deliveryState(row, row.d_status),
            endpoint:
              row.e_id === null
                ? null
                : { status: row.endpoint_status!, failingSince: row.failing_since, exhaustedAt: row.exhausted_at },
          };
        return { task, input };
      })
      .sort((a, b) => (a.task.delivery_id < b.task.delivery_id ? -1 : 1));
  }

  protected claimQuery(owner: string, limit: number, scope: ClaimScope, leaseUntil: number) {
    // As the claim statement reads them (postgres-statements.ts): the due ids as an array.
    const due = this.dueQuery(limit, scope).forUpdate().skipLocked();
    return this.ctx.db
      .updateTable('deliveries')
      .set({ lease_owner: owner, lease_until: leaseUntil })
      .where(sql<boolean>`${sql.ref('id')} = any(array(${due}))`);
  }

  /** One statement per 500: the first attempts as a JSON array joined by delivery id. */
  protected async writeFirsts(
    trx: Executor,
    fields: Record<string, unknown>,
    attemptsAdded: number,
    firsts: readonly PlannedAttempt[],
  ) {
    const recorded = Object.fromEntries(
      FIRST_ATTEMPT_COLUMNS.map(([column, from, type]) => [
        column,
        sql<never>`cast(j.value ->> ${sql.lit(from)} as ${sql.raw(type)})`,
      ]),
    );
    for (const part of chunks([...firsts]))
      await trx
        .updateTable('deliveries')
        .from(sql`jsonb_array_elements(${JSON.stringify(part)}::jsonb)`.as('j'))
        .set({
          ...fields,
          attempt_count: sql<number>`attempt_count + ${attemptsAdded}`,
          ...recorded,
        })
        .whereRef('deliveries.id', '=', sql<string>`cast(j.value ->> 'delivery_id' as text)`)
        .execute();
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
      const ranged = await this.ranged();
      const [row] = await this.run<{ ok: boolean }>(completeStatement(fast, ranged));
      if (row?.ok) {
        this.batches.oneStatement++;
        if (ranged) this.batches.ranged++;
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
      if ((await this.events.raiseStored(this.ctx.now())) > 0) this.onQueued();
    } catch (error) {
      process.emitWarning(`raising stored operational events failed: ${(error as Error)?.message ?? String(error)}`);
    }
  }

  /**
   * Outcome batches written each way since start (the one checked statement, or the transaction), and how
   * many of the statements found their deliveries by their ids' range too (partitioned tables).
   */
  readonly batches = { oneStatement: 0, transaction: 0, ranged: 0 };

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
      .where((eb) => (failed.length > 0 ? eb.or([eb('id', 'in', failed), changedBySuccess()]) : changedBySuccess()))
      .orderBy('id')
      .forUpdate()
      .execute();
  }

  /**
   * Locks the deliveries in id order (the lock order above) as it reads them: a manual retry of one of
   * them, which locks it too (the queue book's enqueueManual), then numbers its attempt before or after
   * this batch's next, never the same. Found by primary key from an array, whatever the statistics.
   */
  protected async readDeliveries(trx: Executor, ids: string[]): Promise<Map<string, DeliveryState>> {
    if (ids.length === 0) return new Map();
    const rows = await this.deliveryStates(trx)
      .where(sql<boolean>`${sql.ref('id')} = any(${ids}::text[])`)
      .orderBy('id')
      .forUpdate()
      .execute();
    return deliveryStatesById(rows);
  }
}

/**
 * Where the queued deliveries (`run_at` set) begin: the start (ms) of the oldest deliveries partition that
 * holds one; null when no start can be given (the legacy table or the default partition holds one, or there
 * are no partitions); +Infinity when none is queued. One statement probes each partition's due index (the
 * default's first, then oldest first) and answers the first that holds a queued delivery.
 */
async function queuedFrom(db: Executor): Promise<number | null> {
  const partitions = await partitionsOf(db, 'deliveries');
  if (partitions.length === 0) return null;
  // The default partition's rows may have any id: probed first, and a queued one there bounds nothing.
  const order = [...partitions.filter((p) => p.range === null), ...partitions.filter((p) => p.range !== null)];
  const probes = order.map(
    (p, i) => sql`select ${sql.lit(i)} as i where exists (select 1 from ${sql.table(p.name)} where run_at is not null)`,
  );
  const { rows } = await sql<{
    i: number;
  }>`select i from (${sql.join(probes, sql` union all `)}) probes order by i limit 1`.execute(db);
  if (rows.length === 0) return Number.POSITIVE_INFINITY;
  return order[rows[0]!.i]!.range?.from ?? null;
}

/** Whether `id` lies outside `range` (a null id: no message to look for). */
function outside(id: string | null, range: { from: string; to: string }): boolean {
  return id !== null && (id < range.from || id >= range.to);
}

/** A row of the claim statement: the claimed delivery as the claim left it, and its inputs. */
interface ClaimedRow extends LoadedRow, QueueColumns {
  id: string;
  endpoint_id: string;
  d_status: DeliveryStatus;
  attempt_count: number;
  schedule_step: number;
  attempt_seq: number;
  first_attempt_id: string | null;
  failing_since: number | null;
  exhausted_at: number | null;
}
