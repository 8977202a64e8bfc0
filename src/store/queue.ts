import { sql } from 'kysely';
import { newId } from '../domain/ids.js';
import { nextDelayAfterFailure } from '../domain/retry.js';
import { nextEndpointHealth, type EndpointStatus } from '../domain/endpoint-state.js';
import type { Endpoints, SigningSecrets } from './endpoints.js';
import { chunks, type StoreContext, type Executor } from './common.js';
import type { TaskRow } from './schema.js';

// The worker's side of the store: claim due attempts under a lease, load what sending needs, and record
// each outcome with its consequences (next attempt, delivery status, endpoint health) in one transaction.

export interface ClaimedTask extends TaskRow {
  /** The lease end written by the claim; completing requires it to be unchanged (we still own the task). */
  leaseUntil: number;
}

export interface AttemptInput {
  task: ClaimedTask;
  delivery: { id: string; messageId: string; eventType: string; createdAt: number; livemode: boolean };
  endpoint: { id: string; url: string; status: EndpointStatus; secrets: SigningSecrets } | null;
  payloadJson: string | null;
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

export interface QueuePolicy {
  retryScheduleMs: number[];
  disableAfterMs: number;
  leaseMs: number;
}

export class Queue {
  constructor(
    private readonly ctx: StoreContext,
    private readonly endpoints: Endpoints,
    private readonly policy: QueuePolicy,
  ) {}

  /**
   * Claims up to `limit` due attempts for `owner`, skipping endpoints in `excludeEndpoints` (those already
   * busy in this worker). A claim moves `run_at` to the lease end, so a worker that dies frees its tasks
   * when the lease runs out.
   */
  async claim(owner: string, limit: number, excludeEndpoints: string[], onlyEndpoint?: string): Promise<ClaimedTask[]> {
    const now = this.ctx.now();
    const leaseUntil = now + this.policy.leaseMs;
    let due = this.ctx.db
      .selectFrom('delivery_tasks')
      .select('id')
      .where('run_at', '<=', now)
      .orderBy('run_at')
      .limit(limit);
    if (excludeEndpoints.length > 0) due = due.where('endpoint_id', 'not in', excludeEndpoints);
    // A top-up for one endpoint reads only its due tasks (index delivery_tasks_by_endpoint_due).
    if (onlyEndpoint !== undefined) due = due.where('endpoint_id', '=', onlyEndpoint);
    // PostgreSQL: workers in other processes skip rows being claimed instead of waiting on them.
    if (this.ctx.dialect === 'postgres') due = due.forUpdate().skipLocked();
    const rows = await this.ctx.db
      .updateTable('delivery_tasks')
      .set({ run_at: leaseUntil, lease_owner: owner })
      .where('id', 'in', due)
      .returningAll()
      .execute();
    return rows.map((row) => ({ ...row, leaseUntil })).sort((a, b) => (a.id < b.id ? -1 : 1));
  }

  /** When the next queued attempt (outside `excludeEndpoints`) is due, or null when nothing is queued. */
  async nextDueAt(excludeEndpoints: string[] = []): Promise<number | null> {
    let query = this.ctx.db.selectFrom('delivery_tasks').select((eb) => eb.fn.min('run_at').as('due'));
    if (excludeEndpoints.length > 0) query = query.where('endpoint_id', 'not in', excludeEndpoints);
    const row = await query.executeTakeFirst();
    return row?.due == null ? null : Number(row.due);
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
    const byLease = new Map<number, string[]>();
    for (const task of tasks) byLease.set(task.leaseUntil, [...(byLease.get(task.leaseUntil) ?? []), task.id]);
    for (const [leaseUntil, ids] of byLease) {
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
  async load(tasks: ClaimedTask[]): Promise<AttemptInput[]> {
    if (tasks.length === 0) return [];
    const rows = await this.ctx.db
      .selectFrom('deliveries')
      .innerJoin('messages', 'messages.id', 'deliveries.message_id')
      .leftJoin('payloads', 'payloads.message_id', 'deliveries.message_id')
      .leftJoin('endpoints', 'endpoints.id', 'deliveries.endpoint_id')
      .select([
        'deliveries.id',
        'deliveries.message_id',
        'deliveries.livemode',
        'messages.event_type',
        'messages.created_at',
        'payloads.body',
        'endpoints.id as endpoint_id',
        'endpoints.url',
        'endpoints.status as endpoint_status',
        'endpoints.secret_sealed',
        'endpoints.previous_secret_sealed',
        'endpoints.previous_valid_until',
      ])
      .where('deliveries.id', 'in', tasks.map((t) => t.delivery_id))
      .execute();
    const byId = new Map(rows.map((row) => [row.id, row]));
    const now = this.ctx.now();
    return tasks.flatMap((task) => {
      const row = byId.get(task.delivery_id);
      if (!row) return []; // removed by retention meanwhile; complete() drops the task
      return [
        {
          task,
          delivery: { id: row.id, messageId: row.message_id, eventType: row.event_type, createdAt: row.created_at, livemode: Boolean(row.livemode) },
          endpoint:
            row.endpoint_id === null
              ? null
              : {
                  id: row.endpoint_id,
                  url: row.url!,
                  status: row.endpoint_status as EndpointStatus,
                  secrets: this.endpoints.signingSecrets(
                    { secret_sealed: row.secret_sealed!, previous_secret_sealed: row.previous_secret_sealed, previous_valid_until: row.previous_valid_until },
                    now,
                  ),
                },
          payloadJson: row.body ?? null,
        },
      ];
    });
  }

  /** Drops a task whose delivery no longer exists. */
  async drop(task: ClaimedTask): Promise<void> {
    await this.ctx.db.deleteFrom('delivery_tasks').where('id', '=', task.id).execute();
  }

  /**
   * Records one attempt and everything that follows from it, atomically: the attempt row, the delivery's
   * status and next attempt, and the endpoint's health. Returns false when the lease was lost (another
   * worker owns the task now); the attempt is still recorded, since it was made.
   */
  async complete(input: AttemptInput, result: AttemptResult, owner: string): Promise<boolean> {
    return this.ctx.db.transaction().execute((trx) => this.completeIn(trx, input, result, owner));
  }

  /** Records several outcomes in one transaction (one commit for the batch). */
  async completeMany(items: { input: AttemptInput; result: AttemptResult }[], owner: string): Promise<boolean[]> {
    return this.ctx.db.transaction().execute(async (trx) => {
      const owned: boolean[] = [];
      for (const { input, result } of items) owned.push(await this.completeIn(trx, input, result, owner));
      return owned;
    });
  }

  private async completeIn(trx: Executor, input: AttemptInput, result: AttemptResult, owner: string): Promise<boolean> {
    const { task } = input;
    const now = result.at;
    {
      await trx
        .insertInto('attempts')
        .values({
          id: newId('attempt', now),
          delivery_id: task.delivery_id,
          attempt_number: task.attempt_number,
          trigger: task.trigger,
          status: result.ok ? 'success' : 'failed',
          response_status: result.responseStatus,
          response_body: result.responseBody,
          error: result.error,
          duration_ms: result.durationMs,
          created_at: now,
        })
        .execute();
      const owned = await trx
        .deleteFrom('delivery_tasks')
        .where('id', '=', task.id)
        .where('lease_owner', '=', owner)
        .where('run_at', '=', task.leaseUntil)
        .executeTakeFirst();
      await trx
        .updateTable('deliveries')
        .set((eb) => ({ attempt_count: eb('attempt_count', '+', 1), updated_at: now }))
        .where('id', '=', task.delivery_id)
        .execute();
      if (Number(owned.numDeletedRows) === 0) {
        // Another worker has the task now, or it was cancelled (endpoint disabled or deleted). Either way
        // the schedule is not ours to move, but a request that got a 2xx did deliver the message.
        if (result.ok) await this.markDelivered(trx, task.delivery_id, now);
        return false;
      }

      const exhausted = await this.settleDelivery(trx, input, result);
      if (input.endpoint && input.endpoint.status !== 'disabled') await this.updateHealth(trx, input.endpoint.id, result, exhausted);
      return true;
    }
  }

  /** Moves the delivery on after an attempt. Returns true when this failure used up the schedule. */
  private async settleDelivery(trx: Executor, input: AttemptInput, result: AttemptResult): Promise<boolean> {
    const { task } = input;
    const now = result.at;
    const delivery = await trx
      .selectFrom('deliveries')
      .select(['status', 'schedule_step', 'attempt_seq'])
      .where('id', '=', task.delivery_id)
      .executeTakeFirstOrThrow();

    if (result.ok) {
      await this.markDelivered(trx, task.delivery_id, now);
      return false;
    }
    // Already delivered by another attempt: a failure now changes nothing.
    if (delivery.status === 'success') {
      await this.setDelivery(trx, task.delivery_id, {}, now);
      return false;
    }

    const endpointDisabled = input.endpoint === null || input.endpoint.status === 'disabled';
    if (task.trigger === 'scheduled') {
      const nextStep = delivery.schedule_step + 1;
      const delay = endpointDisabled ? null : nextDelayAfterFailure(this.policy.retryScheduleMs, nextStep, result.retryAfterMs);
      if (delay === null) {
        await this.setDelivery(trx, task.delivery_id, { status: endpointDisabled && input.endpoint ? 'disabled' : 'failed', schedule_step: nextStep }, now);
        return !endpointDisabled;
      }
      const runAt = now + delay;
      await trx
        .insertInto('delivery_tasks')
        .values({ id: newId('task', now), delivery_id: task.delivery_id, endpoint_id: task.endpoint_id, trigger: 'scheduled', attempt_number: delivery.attempt_seq + 1, run_at: runAt, lease_owner: null })
        .execute();
      await trx
        .updateTable('deliveries')
        .set({ status: 'pending', schedule_step: nextStep, attempt_seq: delivery.attempt_seq + 1, next_attempt_at: runAt, updated_at: now })
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
      await this.setDelivery(trx, task.delivery_id, { status: endpointDisabled && input.endpoint ? 'disabled' : 'failed' }, now);
    } else {
      await this.setDelivery(trx, task.delivery_id, {}, now);
    }
    return false;
  }

  /** Delivered: the remaining scheduled attempt is no longer needed (manual ones were asked for). */
  private async markDelivered(trx: Executor, deliveryId: string, now: number): Promise<void> {
    await trx.deleteFrom('delivery_tasks').where('delivery_id', '=', deliveryId).where('trigger', '=', 'scheduled').execute();
    await this.setDelivery(trx, deliveryId, { status: 'success' }, now);
  }

  private async nextQueuedAt(trx: Executor, deliveryId: string): Promise<number | null> {
    const row = await trx.selectFrom('delivery_tasks').select((eb) => eb.fn.min('run_at').as('due')).where('delivery_id', '=', deliveryId).executeTakeFirst();
    return row?.due == null ? null : Number(row.due);
  }

  private async setDelivery(
    trx: Executor,
    deliveryId: string,
    changes: { status?: string; schedule_step?: number; next_attempt_at?: number | null },
    now: number,
  ): Promise<void> {
    const nextAttemptAt = changes.next_attempt_at !== undefined ? changes.next_attempt_at : await this.nextQueuedAt(trx, deliveryId);
    await trx
      .updateTable('deliveries')
      .set({ ...changes, next_attempt_at: nextAttemptAt, updated_at: now })
      .where('id', '=', deliveryId)
      .execute();
  }

  private async updateHealth(trx: Executor, endpointId: string, result: AttemptResult, exhausted: boolean): Promise<void> {
    const current = await trx.selectFrom('endpoints').select(['status', 'failing_since']).where('id', '=', endpointId).executeTakeFirst();
    if (!current) return;
    const health = nextEndpointHealth(
      { status: current.status as EndpointStatus, failingSince: current.failing_since },
      { ok: result.ok, responseStatus: result.responseStatus, exhausted, at: result.at },
      this.policy.disableAfterMs,
    );
    if (health.status === current.status && health.failingSince === current.failing_since) return;
    await this.endpoints.recordHealth(trx, endpointId, health, result.at);
  }

  /** PostgreSQL: wakes idle workers in every process once the surrounding transaction commits. */
  static async notify(db: Executor): Promise<void> {
    await sql`select pg_notify('herald_tasks', '')`.execute(db);
  }
}
