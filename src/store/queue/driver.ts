import { type RawBuilder, sql, type UpdateQueryBuilder, type UpdateResult } from 'kysely';
import type { EndpointHealth } from '../../domain/endpoint-state.js';
import { PARKED_AT } from '../../domain/fifo.js';
import {
  type DeliveryChange,
  type DeliveryState,
  type EndpointPause,
  deliveriesToRead,
  endpointsToRead,
  type OutcomePlan,
  outcomePlan,
  placeAttempts,
  type PlannedAttempt,
  recordingPlan,
  taskKey,
} from '../../domain/outcome-plan.js';
import { EMPTY_QUEUE, pick } from '../../domain/queue-slot.js';
import { chunks, type Executor, type StoreContext } from '../common.js';
import { insertNewRows } from '../insert-rows.js';
import { eventCauses } from '../../domain/operational.js';
import { grantStarts } from '../../domain/rate.js';
import type {
  AttemptInput,
  ClaimedTask,
  ClaimScope,
  EndpointAccess,
  OutcomeEventSink,
  QueueDeps,
  QueuePolicy,
  Recorded,
} from './types.js';
import type { Database } from '../schema.js';
import { InputReader, loadEndpoints, loadInputs } from './inputs.js';
import { markHealthy } from './statements.js';
import { byLeaseEnd, headsAre, heldUnder, notHeld } from './lease.js';
import { QUEUE_COLUMNS } from './columns.js';
import { holdEndpoint, unparkedRunAt } from './book.js';

/** Times takeStarts reads and moves an endpoint's stored time before it gives up for this request. */
const TAKE_STARTS_TRIES = 5;

/** When released attempts are due again (QueueDriver.release). */
export type ReleaseDue = 'now' | 'as-queued' | number;

/**
 * What the two queue drivers (sqlite.ts, postgres.ts) share: the statements that read and write the same
 * way on both, and recording outcomes: read the state they depend on, have the planner decide
 * (src/domain/outcome-plan.ts), apply its plan. A driver supplies the statements its database needs
 * written its own way (the claim, the locks), and decides nothing about outcomes.
 */
export abstract class QueueDriver {
  protected readonly endpoints: EndpointAccess;
  protected readonly events: OutcomeEventSink;

  constructor(
    protected readonly ctx: StoreContext,
    deps: QueueDeps,
    protected readonly policy: QueuePolicy,
    /**
     * Called after a commit of outcomes that queued attempts of operational webhooks, so that a worker
     * claims them at once instead of at its next poll.
     */
    protected readonly onQueued: () => void = () => {},
  ) {
    this.endpoints = deps.endpoints;
    this.events = deps.events;
  }

  /**
   * Claims up to `limit` due attempts for `owner`, within `scope` (all due attempts when it is empty): the
   * claim writes the deliveries' lease, so a worker that dies frees its attempts when the lease runs out.
   * Sorted by delivery id, the order in which outcomes lock deliveries.
   */
  async claim(owner: string, limit: number, scope: ClaimScope = {}): Promise<ClaimedTask[]> {
    const leaseUntil = this.ctx.now() + this.policy.leaseMs;
    const rows = await this.claimQuery(owner, limit, scope, leaseUntil)
      .returning(['id', 'endpoint_id', 'next_trigger', 'next_attempt'])
      .execute();
    return rows.map((row) => claimedTask(row, leaseUntil)).sort((a, b) => (a.delivery_id < b.delivery_id ? -1 : 1));
  }

  /**
   * `claim` and `load` together: each claimed task with what sending it needs (null when its delivery is
   * gone), payloads over CLAIMED_PAYLOAD_LIMIT left for later.
   */
  abstract claimLoaded(
    owner: string,
    limit: number,
    scope?: ClaimScope,
  ): Promise<{ task: ClaimedTask; input: AttemptInput | null }[]>;

  /** The claim's update: it leases the due attempts `dueQuery` reads. */
  protected abstract claimQuery(
    owner: string,
    limit: number,
    scope: ClaimScope,
    leaseUntil: number,
  ): UpdateQueryBuilder<Database, 'deliveries', 'deliveries', UpdateResult>;

  /** The due attempts a claim takes, earliest first: their deliveries' ids. */
  protected dueQuery(limit: number, { skip = [], only, dueAfter = 0 }: ClaimScope) {
    const now = this.ctx.now();
    let due = this.ctx.db
      .selectFrom('deliveries')
      .select('id')
      .where('run_at', '<=', now)
      .where(notHeld(now))
      .orderBy('run_at')
      .limit(limit);
    if (dueAfter > 0) due = due.where('run_at', '>', dueAfter);
    if (skip.length > 0) due = due.where(this.endpointNotAmong(skip));
    // A top-up for one endpoint reads only its due attempts (index deliveries_due_by_endpoint).
    if (only !== undefined) due = due.where('endpoint_id', '=', only);
    return due;
  }

  /**
   * `endpoint_id` is none of `ids`, bound as one parameter however many there are: `not in (…)` binds one per
   * id, and a worker with thousands of request slots would pass SQLite's 32,766 or PostgreSQL's 65,535
   * parameters and fail every claim.
   */
  protected abstract endpointNotAmong(ids: readonly string[]): RawBuilder<boolean>;

  /**
   * When the next queued attempt outside `excludeEndpoints` comes due, of those due after `since` (null when
   * there is none). The worker asks after a claim that took every due attempt it could, with the time the
   * claim started: an attempt due before then that is still queued is another worker's or waits for its
   * endpoint's top-up. Reading from `since` on, not from the oldest attempt, keeps the read from walking past
   * every due attempt of the endpoints left out (a backlog of 100,000: 15–28 ms a read). What a narrow race
   * leaves due without a wake (a retry recorded after its own due time, an attempt another PostgreSQL worker
   * released or failed to claim meanwhile) waits for the next general claim, at most 500 ms, not 10; up to
   * the worker's next claim over the whole queue (5 s) if it was due more than a second before it could be
   * seen (src/delivery/worker.ts).
   */
  async nextDueAt(excludeEndpoints: readonly string[] = [], since = 0): Promise<number | null> {
    const row = await this.nextDueQuery(excludeEndpoints, since).executeTakeFirst();
    return row?.due == null ? null : Number(row.due);
  }

  /**
   * nextDueAt's statement (test/postgres/plans.test.ts plans it): the due index read in order from `since`,
   * stopping at the first attempt no worker holds. An attempt held by a worker that dies comes back through
   * the heartbeat (handed back due now, which wakes the workers) or, without one, the next claim over the
   * whole queue; reading lease ends here would read every queued row, as no index orders them.
   */
  nextDueQuery(excludeEndpoints: readonly string[], since: number) {
    const query = this.ctx.db
      .selectFrom('deliveries')
      .select('run_at as due')
      .where('run_at', '>', since)
      .where(notHeld(this.ctx.now()))
      .orderBy('run_at')
      .limit(1);
    return excludeEndpoints.length > 0 ? query.where(this.endpointNotAmong(excludeEndpoints)) : query;
  }

  /** Extends the lease of an attempt that waited in memory; false when another worker took it meanwhile. */
  async extendLease(task: ClaimedTask, owner: string): Promise<boolean> {
    const leaseUntil = this.ctx.now() + this.policy.leaseMs;
    const result = await this.ctx.db
      .updateTable('deliveries')
      .set({ lease_until: leaseUntil })
      .where('id', '=', task.delivery_id)
      .where('next_attempt', '=', task.attempt_number)
      .where((eb) => heldUnder(eb, owner, task.leaseUntil))
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) return false;
    task.leaseUntil = leaseUntil;
    return true;
  }

  /**
   * Gives claimed tasks back, due again at `due`: `now` by default (a worker that stops, an attempt it
   * cannot make); a time (an endpoint that asked for a pause); or `as-queued`, due when they were, for the
   * attempts a claim took beyond their endpoint's share, which the worker's top-ups of that endpoint take
   * again: only the lease changes, which no index covers, so on PostgreSQL the update is HOT.
   */
  async release(tasks: ClaimedTask[], owner: string, due: ReleaseDue = 'now'): Promise<void> {
    const free = { lease_owner: null, lease_until: null };
    const set = due === 'as-queued' ? free : { ...free, run_at: due === 'now' ? this.ctx.now() : due };
    // Attempts of one claim share their lease end, so this is one statement per claim.
    for (const [leaseUntil, leases] of byLeaseEnd(tasks)) {
      for (const part of chunks(leases, 200)) {
        await this.ctx.db
          .updateTable('deliveries')
          .set(set)
          .where((eb) => eb.and([headsAre(eb, part), heldUnder(eb, owner, leaseUntil)]))
          .execute();
      }
    }
  }

  /** Everything sending needs, for a batch of claimed tasks. */
  load(tasks: ClaimedTask[]): Promise<AttemptInput[]> {
    return loadInputs(this.ctx.db, this.inputReader(), tasks, null);
  }

  /** Reads inputs at the store's time now, with one memo of opened secrets. */
  protected inputReader(): InputReader {
    return new InputReader(this.endpoints, this.ctx.now(), this.policy.testNetwork);
  }

  /**
   * The endpoints as they are now (url, status, signing secrets), for attempts claimed a while ago: an
   * endpoint deleted meanwhile is left out.
   */
  endpointsNow(ids: string[]): Promise<NonNullable<AttemptInput['endpoint']>[]> {
    return loadEndpoints(this.ctx.db, this.inputReader(), ids);
  }

  /**
   * Up to `want` starts of a rate-limited endpoint, at most `limit` a second across every worker sharing
   * the store (src/domain/rate.ts decides): when each may happen, in microseconds since the epoch, earliest
   * first, none more than a second ahead; none when the next free time lies beyond that. The stored time
   * moves only if it is still the one read, so two workers asking at once take turns; a request that
   * keeps losing that race gets nothing this time and asks again.
   */
  async takeStarts(endpointId: string, limit: number, want: number): Promise<number[]> {
    for (let tries = 0; tries < TAKE_STARTS_TRIES; tries++) {
      const row = await this.ctx.db
        .selectFrom('endpoint_rates')
        .select('tat_us')
        .where('endpoint_id', '=', endpointId)
        .executeTakeFirst();
      const before = row === undefined ? 0 : Number(row.tat_us);
      const grant = grantStarts(before, this.ctx.now() * 1000, limit, want);
      if (grant.startsUs.length === 0) return [];
      const moved =
        row === undefined
          ? await this.ctx.db
              .insertInto('endpoint_rates')
              .values({ endpoint_id: endpointId, tat_us: grant.tatUs })
              .onConflict((oc) => oc.column('endpoint_id').doNothing())
              .executeTakeFirst()
              .then((result) => Number(result.numInsertedOrUpdatedRows ?? 0n))
          : await this.ctx.db
              .updateTable('endpoint_rates')
              .set({ tat_us: grant.tatUs })
              .where('endpoint_id', '=', endpointId)
              .where('tat_us', '=', before)
              .executeTakeFirst()
              .then((result) => Number(result.numUpdatedRows));
      if (moved > 0) return grant.startsUs;
    }
    return [];
  }

  /**
   * Moves FIFO endpoints on (src/domain/fifo.ts): for each endpoint (all with parked attempts when none are
   * named), unparks the first attempt of its head, the earliest delivery that still has a scheduled attempt
   * queued, if that attempt is parked; a head whose attempt is already out or waiting for its retry keeps
   * the rest parked. Returns how many attempts were unparked. Each endpoint is one statement, and running it
   * twice, or from two workers at once, unparks nothing twice.
   */
  async advanceFifo(endpointIds?: readonly string[]): Promise<number> {
    const now = this.ctx.now();
    const ids =
      endpointIds ??
      (
        await this.ctx.db
          .selectFrom('deliveries')
          .select('endpoint_id')
          .distinct()
          .where('run_at', '>=', PARKED_AT)
          .execute()
      ).map((row) => row.endpoint_id);
    let unparked = 0;
    for (const endpointId of ids) {
      // The head: the earliest delivery with a scheduled attempt queued, at its head or behind a manual one.
      const head = this.ctx.db
        .selectFrom('deliveries')
        .select((eb) => eb.fn.min('id').as('head'))
        .where('endpoint_id', '=', endpointId)
        .where('run_at', 'is not', null)
        .where((eb) =>
          eb.or([eb('next_trigger', '=', 'scheduled'), eb('queued_after', 'like', '%"trigger":"scheduled"%')]),
        );
      const moved = await this.ctx.db
        .updateTable('deliveries')
        .set({ run_at: unparkedRunAt(now) })
        .where('endpoint_id', '=', endpointId)
        .where('run_at', '>=', PARKED_AT)
        .where('next_trigger', '=', 'scheduled')
        .where('id', '=', head)
        .executeTakeFirst();
      unparked += Number(moved.numUpdatedRows);
    }
    return unparked;
  }

  /** Empties the queue of an attempt whose message no longer exists (retention, a deleted application). */
  async drop(task: ClaimedTask): Promise<void> {
    await this.ctx.db.updateTable('deliveries').set(EMPTY_QUEUE).where('id', '=', task.delivery_id).execute();
  }

  /**
   * Records the outcomes of several attempts in one transaction (record). Returns, per item, whether we
   * still owned its task (another worker may own it now); the attempt is recorded either way, since it was made.
   */
  async completeMany(items: Recorded[], owner: string): Promise<boolean[]> {
    return (await this.record(items, owner)).owned;
  }

  /**
   * Records the outcomes of several attempts in one transaction, with a few statements for the whole batch:
   * what each does is the planner's (outcomePlan), and the operational events it raises are written in the
   * same transaction. Recording the same outcomes again (their first commit went unanswered: a queue thread that
   * ended, a connection lost after COMMIT) changes nothing: their attempts exist already and are not
   * counted again, and their deliveries' leases are gone, so they are not ours.
   */
  async record(items: Recorded[], owner: string): Promise<Pick<OutcomePlan, 'owned' | 'events'>> {
    const { plan, raised } = await this.ctx.db.transaction().execute((trx) => this.planAndApply(trx, items, owner));
    if (raised > 0) afterCommit('onQueued', () => this.onQueued());
    return { owned: plan.owned, events: plan.events };
  }

  /** Plans and writes the outcomes; `raised`: how many attempts of operational webhooks they queued. */
  protected async planAndApply(
    trx: Executor,
    items: Recorded[],
    owner: string,
  ): Promise<{ plan: OutcomePlan; raised: number }> {
    await this.lockForOutcomes(trx, items);
    const now = this.ctx.now();
    const { attempts, pauses } = recordingPlan(items, owner);
    // The paused endpoints' waiting attempts move before the batch's deliveries are locked (the lock order).
    for (const pause of pauses) await this.pauseEndpoint(trx, pause, now);
    const deliveries = await this.readDeliveries(trx, deliveriesToRead(items));
    const placement = placeAttempts(items, attempts, owner, deliveries);
    // Which attempt rows are new is settled by the write itself (a conditional insert).
    const inserted = await insertNewRows(trx, this.ctx.dialect, 'attempts', placement.rows, 'id', 'id');
    const inline = new Set(placement.inline.map((a) => a.id));
    const plan = outcomePlan(
      items,
      owner,
      {
        written: new Set([...inserted, ...inline]),
        inline,
        deliveries,
        endpoints: await this.readHealth(trx, endpointsToRead(items)),
      },
      { retryScheduleMs: this.policy.retryScheduleMs, disableAfterMs: this.policy.disableAfterMs, now },
    );
    await this.apply(trx, plan);
    // Operational events are written with the outcomes that raise them (src/store/operational.ts).
    const raised = await this.events.raise(trx, eventCauses(plan.events, attempts), now);
    return { plan, raised };
  }

  /**
   * Holds back an endpoint's queued attempts until the pause ends: those no worker holds (a worker pauses
   * its own lane).
   */
  private async pauseEndpoint(trx: Executor, { endpointId, until }: EndpointPause, now: number): Promise<void> {
    await holdEndpoint(trx, endpointId, until, now);
  }

  /** Takes what recording a batch writes before anything else is read or written (the locks). */
  protected abstract lockForOutcomes(trx: Executor, items: Recorded[]): Promise<void>;

  /** The deliveries' state the planner reads (DeliveryState), keyed by id; on PostgreSQL, locked in id order. */
  protected abstract readDeliveries(trx: Executor, ids: string[]): Promise<Map<string, DeliveryState>>;

  /** The read of readDeliveries, without its choice of rows. */
  protected deliveryStates(trx: Executor) {
    return trx
      .selectFrom('deliveries')
      .select(['id', 'status', 'schedule_step', 'attempt_seq', 'attempt_count', 'first_attempt_id', ...QUEUE_COLUMNS]);
  }

  /**
   * Sets `fields` on the deliveries of `firsts`, adds `attemptsAdded` to their attempt_count, and records each
   * its own first attempt (its `first_*` columns): the statements are the database's own.
   */
  protected abstract writeFirsts(
    trx: Executor,
    fields: Record<string, unknown>,
    attemptsAdded: number,
    firsts: readonly PlannedAttempt[],
  ): Promise<void>;

  /** The endpoints' health, keyed by id. */
  private async readHealth(trx: Executor, ids: string[]): Promise<Map<string, EndpointHealth>> {
    const health = new Map<string, EndpointHealth>();
    for (const part of chunks(ids)) {
      const rows = await trx
        .selectFrom('endpoints')
        .select(['id', 'status', 'failing_since', 'exhausted_at'])
        .where('id', 'in', part)
        .execute();
      for (const row of rows)
        health.set(row.id, {
          status: row.status,
          failingSince: row.failing_since,
          exhaustedAt: row.exhausted_at,
        });
    }
    return health;
  }

  /**
   * Writes a plan: the deliveries' changes (one statement per set of equal changes, so a batch of
   * successes is one), then the endpoints' health.
   */
  private async apply(trx: Executor, plan: OutcomePlan): Promise<void> {
    for (const { change, ids, firsts } of sameChanges(plan.deliveries)) {
      const { attemptsAdded, queue, ...counters } = change;
      const fields = { ...counters, ...queue };
      if (firsts.length === 0) {
        const counted = attemptsAdded > 0 ? { attempt_count: sql<number>`attempt_count + ${attemptsAdded}` } : {};
        for (const part of chunks(ids))
          await trx
            .updateTable('deliveries')
            .set({ ...fields, ...counted })
            .where('id', 'in', part)
            .execute();
        continue;
      }
      await this.writeFirsts(trx, fields, attemptsAdded, firsts);
    }
    if (plan.healthy) await markHealthy(trx, plan.healthy.ids, plan.healthy.at).execute();
    for (const { id, health, at } of plan.health) await this.endpoints.recordHealth(trx, id, health, at);
  }
}

/**
 * Runs what a commit of outcomes tells its listeners. The outcomes are committed: a listener's failure must
 * not make them look unrecorded to the worker, so it is only a warning.
 */
function afterCommit(name: string, tell: () => void): void {
  try {
    tell();
  } catch (error) {
    process.emitWarning(`${name} failed: ${(error as Error)?.message ?? String(error)}`);
  }
}

/** Rows of deliveryStates as the planner takes them, keyed by id. */
export function deliveryStatesById(
  rows: (DeliveryState & { id: string })[],
  into: Map<string, DeliveryState> = new Map(),
): Map<string, DeliveryState> {
  for (const row of rows) into.set(row.id, deliveryState(row, row.status));
  return into;
}

/** A delivery's state as the planner takes it, from a row read with it (numbers as numbers). */
export function deliveryState(row: Omit<DeliveryState, 'status'>, status: DeliveryState['status']): DeliveryState {
  return {
    status,
    schedule_step: Number(row.schedule_step),
    attempt_seq: Number(row.attempt_seq),
    attempt_count: Number(row.attempt_count),
    first_attempt_id: row.first_attempt_id,
    ...pick(row),
  };
}

/** A claimed delivery's head as the worker holds it. */
export function claimedTask(
  row: { id: string; endpoint_id: string; next_trigger: ClaimedTask['trigger'] | null; next_attempt: number | null },
  leaseUntil: number,
): ClaimedTask {
  const attempt = Number(row.next_attempt);
  return {
    id: taskKey(row.id, attempt),
    delivery_id: row.id,
    endpoint_id: row.endpoint_id,
    trigger: row.next_trigger ?? 'scheduled',
    attempt_number: attempt,
    leaseUntil,
  };
}

type ChangeGroup = { change: Omit<DeliveryChange, 'id' | 'first'>; ids: string[]; firsts: PlannedAttempt[] };

/**
 * Delivery changes grouped by what they set, each group with the ids it applies to; a group of changes
 * that record first attempts (`firsts`, one per delivery) has only such changes.
 */
function sameChanges(changes: DeliveryChange[]): ChangeGroup[] {
  const groups = new Map<string, ChangeGroup>();
  for (const { id, first, ...change } of changes) {
    const key = `${first ? 'first' : ''}${JSON.stringify(change)}`;
    const group = groups.get(key) ?? { change, ids: [], firsts: [] };
    group.ids.push(id);
    if (first) group.firsts.push(first);
    groups.set(key, group);
  }
  return [...groups.values()];
}
