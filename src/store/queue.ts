import { sql, type Expression, type ExpressionBuilder, type SelectQueryBuilder } from 'kysely';
import { idFrom, newId } from '../domain/ids.js';
import { nextDelayAfterFailure } from '../domain/retry.js';
import { nextEndpointHealth, type EndpointStatus } from '../domain/endpoint-state.js';
import type { Endpoints, SecretColumns, SigningSecrets } from './endpoints.js';
import { chunks, type StoreContext, type Executor } from './common.js';
import { insertNewRows } from './insert-rows.js';
import type { Database, TaskRow } from './schema.js';

// The worker's side of the store: claim due attempts under a lease, load what sending needs, and record
// each outcome with its consequences (next attempt, delivery status, endpoint health) in one transaction.

export interface ClaimedTask extends TaskRow {
  /** The lease end written by the claim; completing requires it to be unchanged (we still own the task). */
  leaseUntil: number;
}

export interface AttemptInput {
  task: ClaimedTask;
  delivery: { id: string; messageId: string; eventType: string; createdAt: number; livemode: boolean };
  /** `secrets` is null when this process cannot open them (sealed under another HERALD_SECRET_KEY). */
  /** `publicOnly`: its URL may reach public addresses only (a Live endpoint, or one made in a portal). */
  endpoint: {
    id: string;
    url: string;
    publicOnly: boolean;
    status: EndpointStatus;
    secrets: SigningSecrets | null;
  } | null;
  /** Null when retention removed the payload, when it comes later (below) and, in the worker, once sent. */
  payloadJson: string | null;
  /** Too large to come with a claim (CLAIMED_PAYLOAD_LIMIT): `load` the input when the attempt starts. */
  payloadLater: boolean;
}

export interface AttemptResult {
  ok: boolean;
  responseStatus: number | null;
  responseBody: string | null;
  error: string | null;
  durationMs: number;
  /** Delay the receiver asked for with Retry-After, already bounded. */
  retryAfterMs: number | null;
  /** When the attempt finished. */
  at: number;
}

/**
 * Payloads longer than this many bytes are left out of what a claim loads. A worker holds what it claims
 * until a slot is free (up to four waves of HERALD_CONCURRENCY, 1,024 attempts by default), which with
 * 512 KB payloads would be half a gigabyte; such an attempt loads its input when it starts instead.
 */
export const CLAIMED_PAYLOAD_LIMIT = 16 * 1024;

/** The columns of an attempt's input other than its payload (inputColumns). */
const INPUT_COLUMNS = [
  'deliveries.id as d_id',
  'deliveries.message_id',
  'deliveries.livemode',
  'messages.id as m_id',
  'messages.event_type',
  'messages.created_at',
  'endpoints.id as e_id',
  'endpoints.url',
  'endpoints.public_only',
  'endpoints.status as endpoint_status',
  'endpoints.secret_sealed',
  'endpoints.previous_secret_sealed',
  'endpoints.previous_valid_until',
  'endpoints.earlier_secrets_sealed',
  'endpoints.earlier_valid_until',
] as const;

/**
 * What sending an attempt needs: its delivery, message, payload and endpoint. One selection for `load`
 * and `claimLoaded`, so the two cannot drift apart; ids are aliased because the claimed task has an `id`.
 * With `payloadLimit`, a longer payload is left out: its body is null while `payload_id` says it exists
 * (`octet_length` reads the stored length, not the text).
 */
function inputColumns(payloadLimit: number | null) {
  const body =
    payloadLimit === null
      ? sql<string | null>`payloads.body`
      : sql<string | null>`case when octet_length(payloads.body) <= ${payloadLimit} then payloads.body end`;
  return [...INPUT_COLUMNS, body.as('body'), 'payloads.message_id as payload_id'] as const;
}

/** A row of inputColumns (nullable where a left join may find nothing). */
interface LoadedRow {
  d_id: string | null;
  message_id: string | null;
  livemode: number | boolean | null;
  m_id: string | null;
  event_type: string | null;
  created_at: number | null;
  body: string | null;
  payload_id: string | null;
  e_id: string | null;
  url: string | null;
  public_only: number | null;
  endpoint_status: string | null;
  secret_sealed: string | null;
  previous_secret_sealed: string | null;
  previous_valid_until: number | null;
  earlier_secrets_sealed: string | null;
  earlier_valid_until: number | null;
}

/** What a delivery worker uses of the queue: the Queue itself, or a QueueThread standing in for it. */
export type WorkerQueue = Pick<
  Queue,
  'claimLoaded' | 'release' | 'nextDueAt' | 'extendLease' | 'load' | 'endpointsNow' | 'drop' | 'completeMany'
>;

export interface QueuePolicy {
  retryScheduleMs: number[];
  disableAfterMs: number;
  leaseMs: number;
}

/** Which due attempts a claim may take. */
export interface ClaimScope {
  /** Endpoints left out: those already busy in the worker or left to its top-ups. */
  skip?: readonly string[];
  /** Only this endpoint's attempts (a top-up): read through its own index instead of past everyone's. */
  only?: string;
  /**
   * Only attempts due after this time (the worker's window): the read starts there instead of walking
   * past every due task of the skipped endpoints.
   */
  dueAfter?: number;
}

export class Queue {
  constructor(
    private readonly ctx: StoreContext,
    private readonly endpoints: Endpoints,
    private readonly policy: QueuePolicy,
  ) {}

  /**
   * Claims up to `limit` due attempts for `owner`, within `scope` (all due attempts when it is empty). A
   * claim moves `run_at` to the lease end, so a worker that dies frees its tasks when the lease runs out.
   */
  async claim(owner: string, limit: number, scope: ClaimScope = {}): Promise<ClaimedTask[]> {
    const leaseUntil = this.ctx.now() + this.policy.leaseMs;
    const rows = await this.claimQuery(owner, limit, scope, leaseUntil).returningAll().execute();
    return rows.map((row) => ({ ...row, leaseUntil })).sort((a, b) => (a.id < b.id ? -1 : 1));
  }

  /**
   * `claim` and `load` together: each claimed task with what sending it needs (null when its delivery is
   * gone), payloads over CLAIMED_PAYLOAD_LIMIT left for later. On PostgreSQL this is one statement (the
   * claim is a data-modifying CTE joined to the inputs), so a claim costs one round trip instead of two.
   */
  async claimLoaded(
    owner: string,
    limit: number,
    scope: ClaimScope = {},
  ): Promise<{ task: ClaimedTask; input: AttemptInput | null }[]> {
    if (this.ctx.dialect !== 'postgres') {
      const tasks = await this.claim(owner, limit, scope);
      const inputs = new Map(
        (await this.loadWith(tasks, CLAIMED_PAYLOAD_LIMIT)).map((input) => [input.task.id, input]),
      );
      return tasks.map((task) => ({ task, input: inputs.get(task.id) ?? null }));
    }
    const leaseUntil = this.ctx.now() + this.policy.leaseMs;
    const rows = await this.claimLoadedQuery(owner, limit, scope, leaseUntil).execute();
    const now = this.ctx.now();
    const secrets = new Map<string, SigningSecrets | null>();
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
        return { task, input: this.toInput(task, row, now, secrets) };
      })
      .sort((a, b) => (a.task.id < b.task.id ? -1 : 1));
  }

  /** PostgreSQL's claim with its inputs (claimQuery says how its plan stays on the indexes). */
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

  private claimQuery(owner: string, limit: number, { skip = [], only, dueAfter = 0 }: ClaimScope, leaseUntil: number) {
    const now = this.ctx.now();
    let due = this.ctx.db
      .selectFrom('delivery_tasks')
      .select('id')
      .where('run_at', '<=', now)
      .orderBy('run_at')
      .limit(limit);
    if (dueAfter > 0) due = due.where('run_at', '>', dueAfter);
    if (skip.length > 0) due = due.where(this.endpointNotAmong(skip));
    // A top-up for one endpoint reads only its due tasks (index delivery_tasks_by_endpoint_due).
    if (only !== undefined) due = due.where('endpoint_id', '=', only);
    const claim = this.ctx.db.updateTable('delivery_tasks').set({ run_at: leaseUntil, lease_owner: owner });
    if (this.ctx.dialect !== 'postgres') return claim.where('id', 'in', due);
    // PostgreSQL: workers in other processes skip rows being claimed instead of waiting on them. The due ids
    // are read once, as an array the update finds through the primary key. As `id in (…)` the planner
    // expected `limit` rows (100; a claim takes a dozen or so): it hashed them against a scan of every task
    // row, dead ones included, and (in claimLoadedQuery) read the whole deliveries table to join them to
    // their inputs, per claim, on tables of a few thousand rows. From an array it expects 10.
    return claim.where(sql<boolean>`${sql.ref('id')} = any(array(${due.forUpdate().skipLocked()}))`);
  }

  /**
   * When the next queued attempt outside `excludeEndpoints` comes due, of those due after `since` (null when
   * there is none). The worker asks after a claim that took every due task it could, with the time the
   * claim started: a task due before then that is still queued is another worker's or waits for its
   * endpoint's top-up. Reading from `since` on, not from the oldest task, keeps the read from walking past
   * every due task of the endpoints left out (a backlog of 100,000: 15–28 ms a read). What a narrow race
   * leaves due without a wake (a retry recorded after its own due time, a task another PostgreSQL worker
   * released or failed to claim meanwhile) waits for the next general claim, at most 500 ms, not 10; up to
   * the worker's next claim over the whole queue (5 s) if it was due more than a second before it could be
   * seen (src/delivery/worker.ts).
   */
  async nextDueAt(excludeEndpoints: readonly string[] = [], since = 0): Promise<number | null> {
    const row = await this.nextDueQuery(excludeEndpoints, since).executeTakeFirst();
    return row?.due == null ? null : Number(row.due);
  }

  private nextDueQuery(excludeEndpoints: readonly string[], since: number) {
    const query = this.ctx.db
      .selectFrom('delivery_tasks')
      .select((eb) => eb.fn.min('run_at').as('due'))
      .where('run_at', '>', since);
    return excludeEndpoints.length > 0 ? query.where(this.endpointNotAmong(excludeEndpoints)) : query;
  }

  /**
   * `endpoint_id` is none of `ids`, bound as one parameter however many there are: `not in (…)` binds one per
   * id, and a worker with thousands of request slots would pass SQLite's 32,766 or PostgreSQL's 65,535
   * parameters and fail every claim. PostgreSQL plans `<> all(array)` as it plans a `not in` list.
   */
  private endpointNotAmong(ids: readonly string[]) {
    if (this.ctx.dialect === 'postgres') return sql<boolean>`${sql.ref('endpoint_id')} <> all(${ids}::text[])`;
    return sql<boolean>`${sql.ref('endpoint_id')} not in (select value from json_each(${JSON.stringify(ids)}))`;
  }

  /** Extends the lease of a task that waited in memory; false when another worker took it meanwhile. */
  async extendLease(task: ClaimedTask, owner: string): Promise<boolean> {
    const leaseUntil = this.ctx.now() + this.policy.leaseMs;
    const result = await this.ctx.db
      .updateTable('delivery_tasks')
      .set({ run_at: leaseUntil })
      .where('id', '=', task.id)
      .where('lease_owner', '=', owner)
      .where('run_at', '=', task.leaseUntil)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) return false;
    task.leaseUntil = leaseUntil;
    task.run_at = leaseUntil;
    return true;
  }

  /** Gives claimed tasks back so they are due again at once (when a worker stops, or claimed too many). */
  async release(tasks: ClaimedTask[], owner: string): Promise<void> {
    // Tasks of one claim share their lease end, so this is one statement per claim.
    for (const [leaseUntil, ids] of idsByLease(tasks)) {
      for (const part of chunks(ids)) {
        await this.ctx.db
          .updateTable('delivery_tasks')
          .set({ run_at: this.ctx.now(), lease_owner: null })
          .where('id', 'in', part)
          .where('lease_owner', '=', owner)
          .where('run_at', '=', leaseUntil)
          .execute();
      }
    }
  }

  /** Everything sending needs, for a batch of claimed tasks. */
  load(tasks: ClaimedTask[]): Promise<AttemptInput[]> {
    return this.loadWith(tasks, null);
  }

  private async loadWith(tasks: ClaimedTask[], payloadLimit: number | null): Promise<AttemptInput[]> {
    if (tasks.length === 0) return [];
    const rows = await this.ctx.db
      .selectFrom('deliveries')
      .innerJoin('messages', 'messages.id', 'deliveries.message_id')
      .leftJoin('payloads', 'payloads.message_id', 'deliveries.message_id')
      .leftJoin('endpoints', 'endpoints.id', 'deliveries.endpoint_id')
      .select(inputColumns(payloadLimit))
      .where(
        'deliveries.id',
        'in',
        tasks.map((t) => t.delivery_id),
      )
      .execute();
    const byId = new Map(rows.map((row) => [row.d_id, row]));
    const now = this.ctx.now();
    const secrets = new Map<string, SigningSecrets | null>();
    return tasks.flatMap((task) => {
      const row = byId.get(task.delivery_id);
      const input = row && this.toInput(task, row, now, secrets);
      return input ? [input] : []; // removed by retention meanwhile; the worker drops the task
    });
  }

  /**
   * `secrets` memoizes the opened secrets within one load: the tasks of a claim mostly share a few
   * endpoints, and opening a sealed secret is a decryption.
   */
  private toInput(
    task: ClaimedTask,
    row: LoadedRow,
    now: number,
    secrets: Map<string, SigningSecrets | null>,
  ): AttemptInput | null {
    // The delivery or its message is gone (retention, or a deleted application).
    if (row.d_id === null || row.m_id === null) return null;
    return {
      task,
      delivery: {
        id: row.d_id,
        messageId: row.message_id!,
        eventType: row.event_type!,
        createdAt: row.created_at!,
        livemode: Boolean(row.livemode),
      },
      endpoint: row.e_id === null ? null : this.endpointInput(row.e_id, row.endpoint_status!, row, now, secrets),
      payloadJson: row.body ?? null,
      payloadLater: row.body === null && row.payload_id !== null,
    };
  }

  /** An attempt's endpoint from the row a claim, a load or endpointsNow read (one place for its rules). */
  private endpointInput(
    id: string,
    status: string,
    row: Pick<LoadedRow, keyof SecretColumns | 'url' | 'livemode' | 'public_only'>,
    now: number,
    secrets: Map<string, SigningSecrets | null>,
  ): NonNullable<AttemptInput['endpoint']> {
    // Live endpoints, and those whose URL a portal customer chose, reach public addresses only.
    const publicOnly = Boolean(row.livemode) || Boolean(row.public_only);
    return {
      id,
      url: row.url!,
      publicOnly,
      status: status as EndpointStatus,
      secrets: this.secretsOf(row, now, secrets),
    };
  }

  /**
   * The endpoint's signing secrets, or null when they do not open here (sealed under another
   * HERALD_SECRET_KEY): that endpoint's attempts wait, and the rest of the claim goes on (worker.ts).
   */
  private secretsOf(
    row: Pick<LoadedRow, keyof SecretColumns>,
    now: number,
    memo: Map<string, SigningSecrets | null>,
  ): SigningSecrets | null {
    // Every rotation seals a new current secret (a fresh nonce each time), so it names the whole set.
    let secrets = memo.get(row.secret_sealed!);
    if (secrets === undefined) {
      try {
        secrets = this.endpoints.signingSecrets({ ...row, secret_sealed: row.secret_sealed! }, now);
      } catch {
        secrets = null;
      }
      memo.set(row.secret_sealed!, secrets);
    }
    return secrets;
  }

  /**
   * The endpoints as they are now (url, status, signing secrets), for attempts claimed a while ago: an
   * endpoint deleted meanwhile is left out.
   */
  async endpointsNow(ids: string[]): Promise<NonNullable<AttemptInput['endpoint']>[]> {
    if (ids.length === 0) return [];
    const rows = await this.ctx.db
      .selectFrom('endpoints')
      .select([
        'id',
        'url',
        'livemode',
        'public_only',
        'status',
        'secret_sealed',
        'previous_secret_sealed',
        'previous_valid_until',
        'earlier_secrets_sealed',
        'earlier_valid_until',
      ])
      .where('id', 'in', ids)
      .execute();
    const now = this.ctx.now();
    const secrets = new Map<string, SigningSecrets | null>();
    return rows.map((row) => this.endpointInput(row.id, row.status, row, now, secrets));
  }

  /** Drops a task whose delivery no longer exists. */
  async drop(task: ClaimedTask): Promise<void> {
    await this.ctx.db.deleteFrom('delivery_tasks').where('id', '=', task.id).execute();
  }

  /**
   * Records the outcomes of several attempts in one transaction with a few statements for the whole batch
   * (the common case, a 2xx, needs no per-attempt statement; on PostgreSQL a batch of only those is one
   * statement, see completeDelivered); failures move their schedule one by one. Returns, per item, whether
   * we still owned its task (another worker may own it now); the attempt is recorded either way, since it was made.
   * Recording the same outcomes again (their first commit went unanswered: a queue thread that ended, a
   * connection lost after COMMIT) changes nothing: their attempts exist already and are not counted again.
   */
  async completeMany(items: { input: AttemptInput; result: AttemptResult }[], owner: string): Promise<boolean[]> {
    if (this.ctx.dialect === 'postgres' && items.length > 0 && items.every(({ result }) => result.ok)) {
      try {
        return await this.completeDelivered(items, owner);
      } catch (error) {
        // An endpoint it would mark healthy was locked by another writer (lock_not_available): the
        // transaction below waits its turn, taking the endpoints first as every writer does.
        if ((error as { code?: string }).code !== '55P03') throw error;
      }
    }
    return this.ctx.db.transaction().execute(async (trx) => {
      if (this.ctx.dialect === 'postgres') await lockEndpoints(trx, items);
      const now = this.ctx.now();
      const rows = items.map(({ input, result }) => attemptRow(input.task, result, owner));
      const newAttemptsOf = await insertNewRows(trx, this.ctx.dialect, 'attempts', rows, 'id', 'delivery_id');
      // A 2xx delivered the message even when the task was taken or cancelled meanwhile.
      const delivered = new Set(items.filter((i) => i.result.ok).map((i) => i.input.task.delivery_id));
      const owned = await this.takeOwnedTasks(
        trx,
        items.map((i) => i.input.task),
        owner,
        delivered,
      );
      await this.countAttempts(trx, newAttemptsOf, delivered, now);
      const exhausted = new Set<AttemptInput>();
      for (const { input, result } of items) {
        if (!result.ok && owned.has(input.task.id) && (await this.settleFailure(trx, input, result)))
          exhausted.add(input);
      }
      const healthFrom = items.filter(
        ({ input }) => owned.has(input.task.id) && input.endpoint !== null && input.endpoint.status !== 'disabled',
      );
      await this.updateHealth(trx, healthFrom, exhausted);
      return items.map(({ input }) => owned.has(input.task.id));
    });
  }

  /**
   * PostgreSQL, a batch of 2xx outcomes only (the common case): what the general path does for it, in one
   * statement of data-modifying CTEs, so one round trip instead of six (begin, four statements, commit); a
   * statement is atomic on its own. Its parts all see the same snapshot: the next attempt left to a
   * delivered delivery is therefore looked up without the tasks the statement itself deletes, and the
   * endpoints are marked healthy only for tasks it found still ours (their `updated_at` is the latest
   * outcome of the batch, ours or not). Batches are at most a few hundred outcomes (GroupCommit), well
   * within PostgreSQL's parameter limit.
   */
  private async completeDelivered(
    items: { input: AttemptInput; result: AttemptResult }[],
    owner: string,
  ): Promise<boolean[]> {
    const { rows } = await this.completeDeliveredQuery(items, owner).execute(this.ctx.db);
    const owned = ownedTasks(
      items.map(({ input }) => input.task),
      rows,
      owner,
    );
    return items.map(({ input }) => owned.has(input.task.id));
  }

  /** completeDelivered's statement, returning the tasks it deleted. */
  private completeDeliveredQuery(items: { input: AttemptInput; result: AttemptResult }[], owner: string) {
    const db = this.ctx.db;
    const now = this.ctx.now();
    const tasks = items.map(({ input }) => input.task);
    const attempts = db
      .insertInto('attempts')
      .values(items.map(({ input, result }) => attemptRow(input.task, result, owner)))
      .onConflict((oc) => oc.column('id').doNothing())
      .returning('delivery_id');
    const parts = [
      // Only the attempts written now are counted: the same outcomes recorded again change nothing.
      sql`attempts_in as (${attempts})`,
      sql`taken as (${this.takeTasks(db, tasks, owner, new Set(tasks.map((task) => task.delivery_id))).returning(['id', 'lease_owner', 'run_at'])})`,
      sql`counted as (update ${sql.table('deliveries')} set attempt_count = deliveries.attempt_count + c.n, status = 'success',
        next_attempt_at = ${nextRunAt(sql.ref('deliveries.id'), sql`select id from taken`)}, updated_at = ${now}
        from (select delivery_id as id, count(*)::int as n from attempts_in group by delivery_id) as c where deliveries.id = c.id)`,
    ];
    const healthFrom = items.filter(({ input }) => input.endpoint !== null && input.endpoint.status !== 'disabled');
    if (healthFrom.length > 0) {
      const ours = sql.join(
        healthFrom.map(({ input }) => sql`(${input.task.id}, ${input.task.leaseUntil}::bigint, ${input.endpoint!.id})`),
      );
      // In parentheses: kysely writes a raw expression after `in` as it is.
      const ownedEndpoints = sql<string>`(select e.endpoint_id from (values ${ours}) as e(task_id, lease_until, endpoint_id)
        join taken on taken.id = e.task_id and taken.lease_owner = ${owner} and taken.run_at = e.lease_until)`;
      // This statement takes tasks and deliveries before endpoints, the reverse of every other writer, so
      // it must not wait for an endpoint: one that needs marking healthy and is locked (being disabled,
      // deleted, or its failure recorded) fails the statement at once (55P03), and completeMany records
      // the batch in a transaction instead. Healthy endpoints are not locked at all.
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
    return sql<{
      id: string;
      lease_owner: string | null;
      run_at: number;
    }>`with ${sql.join(parts)} select id, lease_owner, run_at from taken`;
  }

  /**
   * Deletes the tasks we still hold (same owner, same lease end) and returns their ids; in the same
   * statement, drops the remaining scheduled attempts of `delivered` deliveries (manual ones were asked for).
   */
  private async takeOwnedTasks(
    trx: Executor,
    tasks: ClaimedTask[],
    owner: string,
    delivered: Set<string>,
  ): Promise<Set<string>> {
    const owned = new Set<string>();
    for (const part of chunks(tasks, 200)) {
      const rows = await this.takeTasks(trx, part, owner, delivered)
        .returning(['id', 'lease_owner', 'run_at'])
        .execute();
      for (const id of ownedTasks(part, rows, owner)) owned.add(id);
    }
    return owned;
  }

  /** The delete of takeOwnedTasks (without its `returning`), for the given tasks. */
  private takeTasks(db: Executor, tasks: ClaimedTask[], owner: string, delivered: Set<string>) {
    const deliveredHere = [...new Set(tasks.filter((t) => delivered.has(t.delivery_id)).map((t) => t.delivery_id))];
    // Tasks of one claim share their lease end: one `run_at = ? and id in (...)` per claim.
    const byLease = idsByLease(tasks);
    return db.deleteFrom('delivery_tasks').where((eb) => {
      const ours = eb.and([
        eb('lease_owner', '=', owner),
        eb.or([...byLease].map(([leaseUntil, ids]) => eb.and([eb('run_at', '=', leaseUntil), eb('id', 'in', ids)]))),
      ]);
      const taken =
        deliveredHere.length === 0
          ? ours
          : eb.or([ours, eb.and([eb('delivery_id', 'in', deliveredHere), eb('trigger', '=', 'scheduled')])]);
      if (this.ctx.dialect !== 'postgres') return taken;
      // PostgreSQL without table statistics expects each value of an `in` list to match 0.5% of the rows, so
      // the lists above read the whole task table for a batch of outcomes (100 at 50,000 tasks: ~10 ms).
      // The rows they can match are found first, by primary key from an array (the planner expects 10), and
      // the delivered deliveries' tasks one delivery at a time (`offset 0` keeps the lateral subquery from
      // becoming a join over the whole table); the lists then only filter those rows. This relies on the
      // queue sessions' random_page_cost (db.ts): at 4 a table of a few hundred tasks is read whole again,
      // and the array is not hashed.
      const candidates = sql`select unnest(${tasks.map((task) => task.id)}::text[]) union all
        select t.id from unnest(${deliveredHere}::text[]) as d(id)
        cross join lateral (select id from delivery_tasks where delivery_id = d.id and trigger = 'scheduled' offset 0) as t`;
      return eb.and([sql<boolean>`id = any(array(${candidates}))`, taken]);
    });
  }

  /**
   * attempt_count + n per delivery, one for each attempt row written now (a delivery may have a scheduled
   * and a manual attempt in one batch); delivered ones also become `success`, with their next attempt the
   * earliest manual one left, if any. An outcome whose row existed already was counted when it was written.
   */
  private async countAttempts(
    trx: Executor,
    newAttemptsOf: string[],
    delivered: Set<string>,
    now: number,
  ): Promise<void> {
    const counts = new Map<string, number>();
    for (const id of newAttemptsOf) counts.set(id, (counts.get(id) ?? 0) + 1);
    const groups = new Map<string, { n: number; success: boolean; ids: string[] }>();
    for (const [id, n] of counts) {
      const success = delivered.has(id);
      const key = `${n}:${success}`;
      const group = groups.get(key);
      if (group) group.ids.push(id);
      else groups.set(key, { n, success, ids: [id] });
    }
    for (const { n, success, ids } of groups.values()) {
      for (const part of chunks(ids)) {
        await trx
          .updateTable('deliveries')
          .set((eb) =>
            success
              ? {
                  attempt_count: eb('attempt_count', '+', n),
                  status: 'success',
                  next_attempt_at: nextRunAt(eb.ref('deliveries.id')),
                  updated_at: now,
                }
              : { attempt_count: eb('attempt_count', '+', n), updated_at: now },
          )
          .where('id', 'in', part)
          .execute();
      }
    }
  }

  /** Moves the delivery on after a failed attempt. Returns true when this failure used up the schedule. */
  private async settleFailure(trx: Executor, input: AttemptInput, result: AttemptResult): Promise<boolean> {
    const { task } = input;
    const now = result.at;
    // The row is ours until commit (countAttempts updated it), so a manual retry of the same delivery, which
    // locks it too (deliveries.ts), numbers its attempt before or after this one's next, never the same.
    const delivery = await trx
      .selectFrom('deliveries')
      .select(['status', 'schedule_step', 'attempt_seq'])
      .where('id', '=', task.delivery_id)
      .executeTakeFirstOrThrow();
    // Already delivered by another attempt: a failure now changes nothing.
    if (delivery.status === 'success') {
      await this.setDelivery(trx, task.delivery_id, {}, now);
      return false;
    }

    const endpointDisabled = input.endpoint === null || input.endpoint.status === 'disabled';
    if (task.trigger === 'scheduled') {
      const nextStep = delivery.schedule_step + 1;
      const delay = endpointDisabled
        ? null
        : nextDelayAfterFailure(this.policy.retryScheduleMs, nextStep, result.retryAfterMs);
      if (delay === null) {
        await this.setDelivery(
          trx,
          task.delivery_id,
          { status: endpointDisabled && input.endpoint ? 'disabled' : 'failed', schedule_step: nextStep },
          now,
        );
        return !endpointDisabled;
      }
      const runAt = now + delay;
      await trx
        .insertInto('delivery_tasks')
        .values({
          id: newId('task', now),
          delivery_id: task.delivery_id,
          endpoint_id: task.endpoint_id,
          trigger: 'scheduled',
          attempt_number: delivery.attempt_seq + 1,
          run_at: runAt,
          lease_owner: null,
        })
        .execute();
      await trx
        .updateTable('deliveries')
        .set({
          status: 'pending',
          schedule_step: nextStep,
          attempt_seq: delivery.attempt_seq + 1,
          next_attempt_at: runAt,
          updated_at: now,
        })
        .where('id', '=', task.delivery_id)
        .execute();
      return false;
    }

    // A failed manual attempt leaves a running schedule alone; otherwise the delivery stays as it was,
    // except that a delivery never delivered is now `failed` (or `disabled` while its endpoint is).
    const waiting = await this.nextQueuedAt(trx, task.delivery_id);
    if (waiting !== null) {
      await this.setDelivery(trx, task.delivery_id, { next_attempt_at: waiting }, now);
    } else if (delivery.status !== 'success') {
      await this.setDelivery(
        trx,
        task.delivery_id,
        { status: endpointDisabled && input.endpoint ? 'disabled' : 'failed' },
        now,
      );
    } else {
      await this.setDelivery(trx, task.delivery_id, {}, now);
    }
    return false;
  }

  private async nextQueuedAt(trx: Executor, deliveryId: string): Promise<number | null> {
    const row = await trx
      .selectFrom('delivery_tasks')
      .select(minRunAt().as('due'))
      .where('delivery_id', '=', deliveryId)
      .executeTakeFirst();
    return row?.due == null ? null : Number(row.due);
  }

  private async setDelivery(
    trx: Executor,
    deliveryId: string,
    changes: { status?: string; schedule_step?: number; next_attempt_at?: number | null },
    now: number,
  ): Promise<void> {
    const nextAttemptAt =
      changes.next_attempt_at !== undefined ? changes.next_attempt_at : await this.nextQueuedAt(trx, deliveryId);
    await trx
      .updateTable('deliveries')
      .set({ ...changes, next_attempt_at: nextAttemptAt, updated_at: now })
      .where('id', '=', deliveryId)
      .execute();
  }

  /** Endpoint health after a batch: each endpoint read once, its outcomes applied in order, written if changed. */
  private async updateHealth(
    trx: Executor,
    items: { input: AttemptInput; result: AttemptResult }[],
    exhausted: Set<AttemptInput>,
  ): Promise<void> {
    // An endpoint whose outcomes here are all successes ends `active` with no failure streak, whatever it
    // was (unless disabled, which an outcome never undoes): one conditional write, no read.
    const failed = new Set(items.filter(({ result }) => !result.ok).map(({ input }) => input.endpoint!.id));
    const healthy = [...new Set(items.map(({ input }) => input.endpoint!.id))].filter((id) => !failed.has(id));
    if (healthy.length > 0) {
      const at = Math.max(
        ...items.filter(({ input }) => !failed.has(input.endpoint!.id)).map(({ result }) => result.at),
      );
      await markHealthy(trx, healthy, at).execute();
      items = items.filter(({ input }) => failed.has(input.endpoint!.id));
    }
    const ids = [...failed];
    if (ids.length === 0) return;
    // Health is read, changed and written back: on PostgreSQL the rows were locked when the transaction
    // began (lockEndpoints), so another batch cannot undo this one's change meanwhile.
    const rows = await trx
      .selectFrom('endpoints')
      .select(['id', 'status', 'failing_since', 'exhausted_at'])
      .where('id', 'in', ids)
      .execute();
    const before = new Map(
      rows.map((row) => [
        row.id,
        { status: row.status as EndpointStatus, failingSince: row.failing_since, exhaustedAt: row.exhausted_at },
      ]),
    );
    const after = new Map(before);
    let at = 0;
    for (const { input, result } of items) {
      const current = after.get(input.endpoint!.id);
      if (!current) continue; // deleted meanwhile
      at = Math.max(at, result.at);
      after.set(
        input.endpoint!.id,
        nextEndpointHealth(
          current,
          { ok: result.ok, responseStatus: result.responseStatus, exhausted: exhausted.has(input), at: result.at },
          this.policy.disableAfterMs,
        ),
      );
    }
    for (const [id, health] of after) {
      const was = before.get(id)!;
      if (
        health.status !== was.status ||
        health.failingSince !== was.failingSince ||
        health.exhaustedAt !== was.exhaustedAt
      )
        await this.endpoints.recordHealth(trx, id, health, at);
    }
  }
}

/**
 * PostgreSQL: locks the endpoints of a batch of outcomes, in id order, before anything else. Their health is
 * read, changed and written back at the end, and two batches recording failures of one endpoint at once
 * must take turns, or the second would write back what it read and undo the first's change (a delivery's
 * exhaustion, which the disabling rule needs). First, because the API locks in that order (an endpoint
 * disabled or deleted: its row, then its tasks, then its deliveries; an application deleted: its
 * endpoints in id order, then the same); taken after the tasks and deliveries the lock deadlocked with
 * such an update.
 */
async function lockEndpoints(trx: Executor, items: { input: AttemptInput; result: AttemptResult }[]): Promise<void> {
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

/**
 * min(run_at) of one delivery's tasks, written `run_at + 0` so that the planner looks the delivery's few
 * tasks up by delivery_id: with plain min(run_at) PostgreSQL (without fresh statistics) walks the
 * (run_at, id) index in order until it meets one of them, which reads the whole queue for a delivery that
 * has none left (the common case after a success).
 */
function minRunAt() {
  return sql<number | null>`min(${sql.ref('delivery_tasks.run_at')} + 0)`;
}

/** When the delivery's next queued attempt runs (null: none left), leaving out the task ids of `except`. */
function nextRunAt(deliveryId: Expression<string>, except?: Expression<string>) {
  const left = except ? sql` and ${sql.ref('delivery_tasks.id')} not in (${except})` : sql``;
  return sql<
    number | null
  >`(select ${minRunAt()} from ${sql.table('delivery_tasks')} where ${sql.ref('delivery_tasks.delivery_id')} = ${deliveryId}${left})`;
}

/**
 * Endpoints after outcomes that were all successes: `active` with no failure streak, whatever they were,
 * unless disabled (which an outcome never undoes). Only rows that change are written.
 */
function markHealthy(
  db: Executor,
  endpointIds: readonly string[] | Expression<string> | SelectQueryBuilder<Database, 'endpoints', { id: string }>,
  at: number,
) {
  return db
    .updateTable('endpoints')
    .set({ status: 'active', failing_since: null, exhausted_at: null, updated_at: at })
    .where('id', 'in', endpointIds)
    .where('status', '!=', 'disabled')
    .where(changedBySuccess);
}

/** Endpoints a success writes to (markHealthy): not `active`, or still carrying a run of failures. */
function changedBySuccess(eb: ExpressionBuilder<Database, 'endpoints'>) {
  return eb.or([eb('status', '!=', 'active'), eb('failing_since', 'is not', null)]);
}

/** Task ids grouped by the lease end their claim wrote. */
function idsByLease(tasks: ClaimedTask[]): Map<number, string[]> {
  const byLease = new Map<number, string[]>();
  for (const task of tasks) {
    const ids = byLease.get(task.leaseUntil);
    if (ids) ids.push(task.id);
    else byLease.set(task.leaseUntil, [task.id]);
  }
  return byLease;
}

/** Ids of the deleted `rows` that were still ours: same owner, same lease end as when we claimed them. */
function ownedTasks(
  tasks: ClaimedTask[],
  rows: { id: string; lease_owner: string | null; run_at: number }[],
  owner: string,
): Set<string> {
  const byId = new Map(tasks.map((task) => [task.id, task]));
  const owned = new Set<string>();
  for (const row of rows) {
    const task = byId.get(row.id);
    if (task && row.lease_owner === owner && Number(row.run_at) === task.leaseUntil) owned.add(row.id);
  }
  return owned;
}

function attemptRow(task: ClaimedTask, result: AttemptResult, owner: string) {
  return {
    // The same outcome recorded twice has one id, so the second write finds its row (insertNewRows); the
    // same task's attempt made by another worker, after the lease ran out, has its own.
    id: idFrom('attempt', result.at, `${task.id}|${owner}`),
    delivery_id: task.delivery_id,
    attempt_number: task.attempt_number,
    trigger: task.trigger,
    status: result.ok ? 'success' : 'failed',
    response_status: result.responseStatus,
    response_body: result.responseBody,
    error: result.error,
    duration_ms: result.durationMs,
    created_at: result.at,
  };
}
