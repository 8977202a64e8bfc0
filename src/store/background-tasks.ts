import { FilterBudget } from '../domain/content-filter.js';
import { idFloor, newId } from '../domain/ids.js';
import { book } from './queue/index.js';
import { beforeRevival } from './partitions/index.js';
import { insertTogether } from './insert-rows.js';
import {
  envelopeOnce,
  listHolds,
  liveFlag,
  receives,
  toPage,
  type Page,
  type PageRequest,
  type Scope,
  type StoreContext,
} from './common.js';
import { type ExpressionBuilder, sql, type Transaction } from 'kysely';
import type { BackgroundTaskRow, Database } from './schema.js';
import type { BackgroundTaskKind, BackgroundTaskStatus } from '../domain/states.js';

// Work that runs in the background in bounded batches, whoever started it and whichever worker runs it:
// an endpoint's recovery (decisions: POST /api/v1/endpoints/{id}/recover). A task is leased to one worker
// at a time; each batch is one short transaction that also moves the task's cursor and renews its lease,
// so a worker that dies leaves the task to the next one, from where it stopped.

/** What a recovery asks for: the endpoint, and the messages' creation times (`until` exclusive; null: open). */
export interface RecoverParams {
  endpointId: string;
  since: number;
  until: number | null;
}

/**
 * What a bulk replay matches (decisions: POST /api/v1/endpoints/{id}/bulk-replay): the endpoint's deliveries
 * of messages created in [since, until) (`until` fixed at the start), narrowed by the message's event type,
 * channel or tag, the delivery's status, and the class of its last attempt's answer (`none`: no answer).
 */
export interface BulkReplayParams extends RecoverParams {
  until: number;
  eventTypes: string[] | null;
  status: BulkReplayStatus | null;
  statusCodeClass: StatusCodeClass | null;
  channel: string | null;
  tag: string | null;
}
export type BulkReplayStatus = 'success' | 'failed' | 'disabled';
export type StatusCodeClass = '1xx' | '2xx' | '3xx' | '4xx' | '5xx' | 'none';

/** How a batch ended: more to do, the task is done, or its lease was lost to another worker (or it was cancelled). */
export type BatchEnd = 'more' | 'done' | 'lost';

export class BackgroundTasks {
  constructor(
    private readonly ctx: StoreContext,
    /** Called after attempts were queued, so workers start at once. */
    private readonly onQueued: () => void,
    /** Steps one message's content filter may take (HERALD_FILTER_BUDGET). */
    private readonly filterBudget: number,
  ) {}

  /**
   * Starts the recovery of an endpoint, or finds the one running: at most one recovery of an endpoint runs
   * at a time (a unique index over running tasks' subjects decides between concurrent calls), since two
   * would each give the same failed deliveries an attempt. `created` tells which.
   */
  async startRecover(scope: Scope, params: RecoverParams): Promise<{ task: BackgroundTaskRow; created: boolean }> {
    return this.start(scope, 'endpoint.recover', params);
  }

  /**
   * Starts sending an endpoint the messages of its application, created in the range, that it has no
   * delivery of and subscribes to now (Svix's replay-missing), or finds the one running (one per endpoint).
   */
  async startReplay(scope: Scope, params: RecoverParams): Promise<{ task: BackgroundTaskRow; created: boolean }> {
    return this.start(scope, 'endpoint.replay', params);
  }

  /**
   * Starts a bulk replay of an endpoint, or finds the one running (one per endpoint: `created` false). Its
   * matches are counted by its first batch, in the background.
   */
  async startBulkReplay(
    scope: Scope,
    params: BulkReplayParams,
  ): Promise<{ task: BackgroundTaskRow; created: boolean }> {
    return this.start(scope, 'endpoint.bulk_replay', params);
  }

  /**
   * Cancels a running task of the environment: no batch starts after this, and a batch under way is rolled
   * back (its write checks the status). Undefined when there is no such task; the task as it is when it is
   * not running.
   */
  async cancel(scope: Scope, id: string): Promise<{ task: BackgroundTaskRow; cancelled: boolean } | undefined> {
    const now = this.ctx.now();
    const cancelled = await this.ctx.db
      .updateTable('background_tasks')
      .set({ status: 'cancelled', lease_until: null, updated_at: now })
      .where('id', '=', id)
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope))
      .where('status', '=', 'running')
      .returningAll()
      .executeTakeFirst();
    if (cancelled) return { task: cancelled, cancelled: true };
    const task = await this.get(scope, id);
    return task && { task, cancelled: false };
  }

  private async start(
    scope: Scope,
    kind: BackgroundTaskKind,
    params: RecoverParams,
  ): Promise<{ task: BackgroundTaskRow; created: boolean }> {
    // The running task may finish between a refused insert and the read: then the insert is tried again.
    for (;;) {
      const now = this.ctx.now();
      const row: BackgroundTaskRow = {
        id: newId('backgroundTask', now),
        org_id: scope.orgId,
        livemode: liveFlag(scope),
        kind,
        status: 'running',
        params: JSON.stringify(params),
        subject_id: params.endpointId,
        cursor: null,
        enqueued: 0,
        total: null,
        failures: 0,
        lease_owner: null,
        lease_until: null,
        created_at: now,
        updated_at: now,
      };
      const inserted = await this.ctx.db
        .insertInto('background_tasks')
        .values(row)
        .onConflict((oc) => oc.doNothing())
        .executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) > 0) return { task: row, created: true };
      const running = await this.ctx.db
        .selectFrom('background_tasks')
        .selectAll()
        .where('kind', '=', kind)
        .where('subject_id', '=', params.endpointId)
        .where('status', '=', 'running')
        .executeTakeFirst();
      if (running) return { task: running, created: false };
    }
  }

  /** The environment's tasks, in `page.order` (newest first by default). */
  async list(
    scope: Scope,
    page: PageRequest,
    filter: { status?: BackgroundTaskStatus | undefined; kind?: BackgroundTaskKind | undefined } = {},
  ): Promise<Page<BackgroundTaskRow>> {
    let query = this.ctx.db
      .selectFrom('background_tasks')
      .selectAll()
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope));
    if (filter.status) query = query.where('status', '=', filter.status);
    if (filter.kind) query = query.where('kind', '=', filter.kind);
    const ascending = page.order === 'asc';
    if (page.cursor) query = query.where('id', ascending ? '>' : '<', page.cursor);
    return toPage(
      await query
        .orderBy('id', ascending ? 'asc' : 'desc')
        .limit(page.limit + 1)
        .execute(),
      page.limit,
    );
  }

  async get(scope: Scope, id: string): Promise<BackgroundTaskRow | undefined> {
    return this.ctx.db
      .selectFrom('background_tasks')
      .selectAll()
      .where('id', '=', id)
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope))
      .executeTakeFirst();
  }

  /**
   * Leases to `owner` a running task that no live worker holds (never leased, or its lease ran out), for
   * `leaseMs`. The update checks the lease again, so two workers never take one task.
   */
  async lease(owner: string, leaseMs: number): Promise<BackgroundTaskRow | undefined> {
    const now = this.ctx.now();
    const free = (eb: ExpressionBuilder<Database, 'background_tasks'>) =>
      eb.and([eb('status', '=', 'running'), eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)])]);
    const candidate = await this.ctx.db
      .selectFrom('background_tasks')
      .select('id')
      .where(free)
      .orderBy('id')
      .limit(1)
      .executeTakeFirst();
    if (!candidate) return undefined;
    return this.ctx.db
      .updateTable('background_tasks')
      .set({ lease_owner: owner, lease_until: now + leaseMs })
      .where('id', '=', candidate.id)
      .where(free)
      .returningAll()
      .executeTakeFirst();
  }

  /**
   * One batch of a recovery: up to `size` deliveries of the endpoint in `failed` or `disabled` whose message
   * was created in the task's range, after its cursor, each get one manual attempt (as a retry does, after
   * every attempt the delivery has) and are `pending` again until it ends, in the order the deliveries were
   * created; the task's cursor, count and lease move in the same transaction. Being pending, a delivery
   * whose recovery attempt waits is not picked by a later recovery. The range starts at the first delivery made at `since` (a delivery
   * is never older than its message), through the index of the endpoint's deliveries, so a batch costs the
   * same at the first delivery and at the millionth.
   */
  async recoverBatch(task: BackgroundTaskRow, owner: string, leaseMs: number, size: number): Promise<BatchEnd> {
    const params = JSON.parse(task.params) as RecoverParams;
    return this.batch(task, owner, leaseMs, size, async (trx, now) => {
      let batch = trx
        .selectFrom('deliveries')
        .innerJoin('messages', 'messages.id', 'deliveries.message_id')
        .select('deliveries.id')
        .where('deliveries.endpoint_id', '=', params.endpointId)
        .where('deliveries.id', '>=', idFloor('delivery', params.since))
        .where('deliveries.status', 'in', ['failed', 'disabled'])
        .where('messages.created_at', '>=', params.since)
        .orderBy('deliveries.id')
        .limit(size);
      if (params.until !== null) batch = batch.where('messages.created_at', '<', params.until);
      if (task.cursor !== null) batch = batch.where('deliveries.id', '>', task.cursor);
      const ids = (await batch.execute()).map((row) => row.id);
      // Only deliveries still failed or disabled now: one given an attempt meanwhile is pending.
      const queued = await book.enqueueManual(trx, this.ctx.dialect, ids, now, ['failed', 'disabled']);
      return { read: ids.length, last: ids.at(-1), queued: queued.size };
    });
  }

  /** One batch of the task, by its kind. */
  async runBatch(task: BackgroundTaskRow, owner: string, leaseMs: number, size: number): Promise<BatchEnd> {
    switch (task.kind) {
      case 'endpoint.replay':
        return this.replayBatch(task, owner, leaseMs, size);
      case 'endpoint.bulk_replay':
        return this.bulkReplayBatch(task, owner, leaseMs, size);
      default:
        return this.recoverBatch(task, owner, leaseMs, size);
    }
  }

  /**
   * One batch of a bulk replay: the next `size` of the endpoint's deliveries in the task's range (by id,
   * after its cursor) are read, and those that match its filters each get one manual attempt, as a retry
   * does, in delivery order; the cursor moves past all that were read, in the same transaction, so a batch
   * costs `size` rows however few match, and a task taken over after a crash goes on from there without
   * queuing anything twice. The first batch also counts every match (the task's `total`). The attempts go
   * at the endpoint's own pace: its rate limit and concurrency, like any attempt.
   */
  async bulkReplayBatch(task: BackgroundTaskRow, owner: string, leaseMs: number, size: number): Promise<BatchEnd> {
    const params = JSON.parse(task.params) as BulkReplayParams;
    return this.batch(task, owner, leaseMs, size, async (trx, now) => {
      const window = trx
        .selectFrom('deliveries')
        .select('id')
        .where('endpoint_id', '=', params.endpointId)
        .where('id', '>', task.cursor ?? '')
        .where('id', '>=', idFloor('delivery', params.since))
        .orderBy('id')
        .limit(size);
      const read = await window.execute();
      const last = read.at(-1)?.id;
      const ids =
        last === undefined
          ? []
          : (
              await bulkReplayMatches(trx, params)
                .select('deliveries.id')
                .where('deliveries.id', '>', task.cursor ?? '')
                .where('deliveries.id', '<=', last)
                .orderBy('deliveries.id')
                .execute()
            ).map((row) => row.id);
      if (task.total === null) {
        const { n } = await bulkReplayMatches(trx, params)
          .select((eb) => eb.fn.countAll<number | string>().as('n'))
          .executeTakeFirstOrThrow();
        task.total = Number(n);
        await trx.updateTable('background_tasks').set({ total: task.total }).where('id', '=', task.id).execute();
      }
      const queued = await book.enqueueManual(trx, this.ctx.dialect, ids, now);
      return { read: read.length, last, queued: queued.size };
    });
  }

  /**
   * One batch of a replay: up to `size` messages of the endpoint's application created in the task's
   * range, after its cursor, in id order; each the endpoint has no delivery of and subscribes to now gets
   * one (its first attempt queued, as at emit). The cursor, count and lease move in the same transaction.
   * A deleted endpoint ends the task.
   */
  async replayBatch(task: BackgroundTaskRow, owner: string, leaseMs: number, size: number): Promise<BatchEnd> {
    const params = JSON.parse(task.params) as RecoverParams;
    return this.batch(task, owner, leaseMs, size, async (trx, now) => {
      const endpoint = await trx
        .selectFrom('endpoints')
        .select(['id', 'app_id', 'status', 'event_types', 'ordering', 'channels', 'filter'])
        .where('id', '=', params.endpointId)
        .executeTakeFirst();
      let batch = trx
        .selectFrom('messages')
        .select(['id', 'org_id', 'livemode', 'app_id', 'event_type', 'channels', 'created_at'])
        .where('app_id', '=', endpoint?.app_id ?? '')
        .where('id', '>=', idFloor('message', params.since))
        .where('created_at', '>=', params.since)
        .orderBy('id')
        .limit(size);
      if (params.until !== null) batch = batch.where('created_at', '<', params.until);
      if (task.cursor !== null) batch = batch.where('id', '>', task.cursor);
      const messages = endpoint ? await batch.execute() : [];
      const had = new Set(
        messages.length === 0
          ? []
          : (
              await trx
                .selectFrom('deliveries')
                .select('message_id')
                .where('endpoint_id', '=', params.endpointId)
                .where(
                  'message_id',
                  'in',
                  messages.map((m) => m.id),
                )
                .execute()
            ).map((row) => row.message_id),
      );
      // Payloads are read only when the endpoint's content filter needs them.
      const payloads =
        endpoint?.filter == null || messages.length === 0
          ? new Map<string, string>()
          : new Map(
              (
                await trx
                  .selectFrom('payloads')
                  .select(['message_id', 'body'])
                  .where(
                    'message_id',
                    'in',
                    messages.map((m) => m.id),
                  )
                  .execute()
              ).map((row) => [row.message_id, row.body]),
            );
      const missing = messages.filter(
        (m) =>
          !had.has(m.id) &&
          receives(
            endpoint!,
            m,
            envelopeOnce(m, () => payloads.get(m.id)),
            new FilterBudget(this.filterBudget),
          ),
      );
      const made = missing.map((m) => book.firstAttempt(m, endpoint!, now, now, endpoint!.ordering === 'fifo'));
      await insertTogether(trx, this.ctx.dialect, [{ table: 'deliveries', rows: made.map((x) => x.delivery) }]);
      return { read: messages.length, last: messages.at(-1)?.id, queued: made.length };
    });
  }

  /**
   * Runs one batch of a task in a transaction that also moves the task's cursor past what the batch read,
   * counts what it queued and renews the lease: the task is finished when a batch reads fewer than
   * `size`. When another worker holds the task now (this one's lease ran out), nothing of the batch is kept.
   */
  private async batch(
    task: BackgroundTaskRow,
    owner: string,
    leaseMs: number,
    size: number,
    work: (
      trx: Transaction<Database>,
      now: number,
    ) => Promise<{ read: number; last: string | undefined; queued: number }>,
  ): Promise<BatchEnd> {
    const end = await this.ctx.db
      .transaction()
      .execute(async (trx) => {
        // Every kind of task gives old deliveries or messages new attempts.
        await beforeRevival(trx, this.ctx.dialect);
        const now = this.ctx.now();
        const { read, last, queued } = await work(trx, now);
        const done = read < size;
        const moved = await trx
          .updateTable('background_tasks')
          .set((eb) => ({
            cursor: last ?? task.cursor,
            enqueued: eb('enqueued', '+', queued),
            status: done ? 'finished' : 'running',
            failures: 0,
            lease_until: now + leaseMs,
            updated_at: now,
          }))
          .where('id', '=', task.id)
          .where('lease_owner', '=', owner)
          .where('status', '=', 'running')
          .executeTakeFirst();
        if (Number(moved.numUpdatedRows) === 0) throw new LeaseLost();
        task.cursor = last ?? task.cursor;
        return { end: (done ? 'done' : 'more') as BatchEnd, queued };
      })
      .catch((error) => {
        if (error instanceof LeaseLost) return { end: 'lost' as BatchEnd, queued: 0 };
        throw error;
      });
    if (end.queued > 0) this.onQueued();
    return end.end;
  }

  /** A batch failed: counted, and after `maxFailures` in a row the task is `failed`. The lease is let go. */
  async batchFailed(task: BackgroundTaskRow, owner: string, maxFailures: number): Promise<void> {
    const now = this.ctx.now();
    await this.ctx.db
      .updateTable('background_tasks')
      .set((eb) => ({
        failures: eb('failures', '+', 1),
        status: eb
          .case()
          .when('failures', '>=', maxFailures - 1)
          .then(eb.val<BackgroundTaskStatus>('failed'))
          .else(eb.val<BackgroundTaskStatus>('running'))
          .end(),
        lease_until: now,
        updated_at: now,
      }))
      .where('id', '=', task.id)
      .where('lease_owner', '=', owner)
      .execute();
  }

  /** Lets go of a task this worker holds, so another takes it up at once (a worker that stops). */
  async release(task: BackgroundTaskRow, owner: string): Promise<void> {
    await this.ctx.db
      .updateTable('background_tasks')
      .set({ lease_until: 0 })
      .where('id', '=', task.id)
      .where('lease_owner', '=', owner)
      .execute();
  }
}

class LeaseLost extends Error {}

/** The first status of each answer class (`2xx`: 200); `none` is no answer. */
const CLASS_FLOOR: Record<Exclude<StatusCodeClass, 'none'>, number> = {
  '1xx': 100,
  '2xx': 200,
  '3xx': 300,
  '4xx': 400,
  '5xx': 500,
};

/**
 * The deliveries a bulk replay matches, as a query to select from: the endpoint's, of messages created
 * in its range, with its filters. The last answer is the response status of the delivery's attempt with
 * the highest number (attempt_log: on its row or in `attempts`); a delivery never attempted has none.
 */
function bulkReplayMatches(db: Transaction<Database>, params: BulkReplayParams) {
  let query = db
    .selectFrom('deliveries')
    .innerJoin('messages', 'messages.id', 'deliveries.message_id')
    .where('deliveries.endpoint_id', '=', params.endpointId)
    .where('deliveries.id', '>=', idFloor('delivery', params.since))
    .where('messages.created_at', '>=', params.since)
    .where('messages.created_at', '<', params.until);
  if (params.eventTypes && params.eventTypes.length > 0)
    query = query.where('messages.event_type', 'in', params.eventTypes);
  if (params.status) query = query.where('deliveries.status', '=', params.status);
  if (params.channel) query = query.where(listHolds('messages.channels', params.channel));
  if (params.tag) query = query.where(listHolds('messages.tags', params.tag));
  const code = params.statusCodeClass;
  if (code) {
    const lastAnswer = sql<
      number | null
    >`(select ${sql.ref('a.response_status')} from ${sql.table('attempt_log')} as ${sql.raw('a')} where ${sql.ref('a.delivery_id')} = ${sql.ref('deliveries.id')} order by ${sql.ref('a.attempt_number')} desc limit 1)`;
    query =
      code === 'none'
        ? query.where(sql<boolean>`${lastAnswer} is null`)
        : query.where(sql<boolean>`${lastAnswer} between ${CLASS_FLOOR[code]} and ${CLASS_FLOOR[code] + 99}`);
  }
  return query;
}
