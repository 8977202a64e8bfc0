import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Store } from '../store/index.js';
import type { AttemptInput, AttemptResult, ClaimedTask, WorkerQueue } from '../store/queue.js';
import { randomToken } from '../domain/ids.js';
import { GroupCommit } from '../store/group-commit.js';
import { Sender } from './sender.js';
import { QueueThread } from '../store/queue-thread.js';
import { signedRequest } from './request.js';

// The delivery loop, in four small parts: claim due attempts (under a lease), dispatch them with bounds
// per endpoint and overall, send, and record the outcome. A slow endpoint only ever holds its own slots.

/** Longest idle sleep; new work in this process (or a NOTIFY on PostgreSQL) wakes the loop sooner. */
const IDLE_POLL_MS = 500;
/**
 * A general claim reads only the tasks due since the last one that took all it could, less this margin:
 * an emit stamps its tasks due before it commits, and the commit may land a little later.
 */
const LATE_COMMIT_MARGIN_MS = 1_000;
/**
 * How often a general claim reads the whole due queue instead of its window, to take what no window saw:
 * a commit later than the margin, a task whose claim by another worker was rolled back. Such a claim
 * walks past every due task of the endpoints it skips (20 ms at a backlog of 100,000; on the embedded
 * store in one process, 20 ms of the event loop): once a second it still showed in the other endpoints'
 * p99 in the bench's neighbour scenario (docs/benchmarks.md).
 */
const WHOLE_QUEUE_CLAIM_MS = 5_000;
/** Most attempts one claim takes. */
const CLAIM_BATCH = 100;
/** Times an outcome is written before the attempt is left to its lease. */
const RECORD_TRIES = 4;
/**
 * Waves of attempts (HERALD_ENDPOINT_CONCURRENCY each) an endpoint may hold claimed here: one in flight and
 * the rest waiting. An endpoint is topped up when it is down to one wave, and the top-up must come back
 * before that wave is done or its slots idle. With the queue on a thread a claim may wait behind outcomes
 * being recorded, and two waves left a fast receiver's slots idle; in process two are kept, because what
 * one worker holds another cannot take (with two PostgreSQL workers, four waves raised the end-to-end p99
 * by a quarter). The worker's claimed budget is as many waves of HERALD_CONCURRENCY, so hung endpoints
 * use up its request slots and its budget in the same proportion whatever the waves. Measured:
 * docs/benchmarks.md.
 */
const WAVES_HELD = { inProcess: 2, queueThread: 4 };
/**
 * An attempt that starts longer than this after its claim reads its endpoint again first, so that an
 * endpoint deleted, disabled, moved to another URL or given a new secret meanwhile is seen (a claim may
 * wait behind a slow receiver for several attempt timeouts).
 */
const ENDPOINT_FRESH_MS = 1_000;
/** How long a worker leaves out of its claims an endpoint whose signing secrets it cannot open (cannotSign). */
const UNSIGNABLE_PAUSE_MS = 60_000;
/** An attempt that starts with less than its timeout and this much of its lease left extends the lease first. */
const LEASE_MARGIN_MS = 5_000;

/**
 * WAVES_HELD for this worker's queue, as many as fit in a lease: the last wave may wait for the ones before
 * it to take their whole timeout, and must still hold its lease when it starts (then it extends it).
 */
export function wavesHeld(queue: WorkerQueue, config: Config): number {
  const wanted = queue instanceof QueueThread ? WAVES_HELD.queueThread : WAVES_HELD.inProcess;
  const fitting = 1 + Math.floor((config.leaseMs - LEASE_MARGIN_MS) / config.attemptTimeoutMs);
  return Math.max(WAVES_HELD.inProcess, Math.min(wanted, fitting));
}

export class DeliveryWorker {
  readonly owner = `wrk_${randomToken(12)}`;
  private readonly sender: Sender;
  /** Outcomes waiting to be recorded; each resolves to whether we still owned the task, or the error. */
  private readonly completions: GroupCommit<{ input: AttemptInput; result: AttemptResult }, boolean | Error>;
  /** Claimed and not yet finished, per endpoint: queued ones first in line. */
  private readonly queued = new Map<string, ClaimedTask[]>();
  private readonly inFlightByEndpoint = new Map<string, number>();
  private claimed = 0;
  /**
   * Endpoints that may have more due tasks than we hold: their last claim was cut by their share or by its
   * limit. When such an endpoint drains to one wave it is topped up; until then general claims skip it
   * (leftToTopUps). A top-up unmarks it while its claim runs and marks it again only if that claim came
   * back full (one that finds fewer tasks, or fails, leaves the endpoint to general claims again).
   */
  private readonly moreDue = new Set<string>();
  /** What sending needs, loaded with the claim (null: the delivery is gone; absent: loaded when the attempt starts). */
  private readonly loaded = new Map<string, AttemptInput | null>();
  private inFlight = 0;
  /** The last read of each endpoint (endpointNow; `at` from performance.now()), shared by the attempts that start within ENDPOINT_FRESH_MS of it. */
  private readonly endpointReads = new Map<string, { at: number; read: Promise<AttemptInput['endpoint']> }>();
  /** Endpoints whose secrets this process cannot open, left out of its claims until then (performance.now()). */
  private readonly unsignableUntil = new Map<string, number>();
  private running = false;
  private loop: Promise<void> | null = null;
  private wakeUp: (() => void) | null = null;
  private woken = false;
  private readonly idle = new Set<() => void>();
  private readonly onQueued = () => {
    this.newWork = true;
    this.wake();
  };
  /** New work was queued (or the idle poll ran out): the next pass runs a general claim. */
  private newWork = true;
  /** Endpoints that left their full share since the last pass: topped up with a claim of their own. */
  private readonly topUp = new Set<string>();
  /** General claims take tasks due after this (0: the whole queue). */
  private claimWindowFrom = 0;
  /** When (performance.now(): a clock that never jumps) the last general claim over the whole due queue that took all it could started. */
  private lastWholeClaim = -Infinity;
  /** When (performance.now()) the next general claim is due at the latest: the idle poll, or the next attempt due. */
  private generalClaimBy = 0;
  /** Whether the claim loop runs the general claim before the top-ups next (they take turns). */
  private generalClaimFirst = false;
  /** Waves of HERALD_ENDPOINT_CONCURRENCY an endpoint may hold claimed here (WAVES_HELD). */
  private readonly wavesHeld: number;

  constructor(
    private readonly store: Store,
    private readonly config: Config,
    private readonly log: Logger,
    /** The store's queue, or on the embedded store in the `worker` role a QueueThread (queue-thread.ts). */
    private readonly queue: WorkerQueue = store.queue,
  ) {
    this.wavesHeld = wavesHeld(queue, config);
    this.sender = new Sender({
      attemptTimeoutMs: config.attemptTimeoutMs,
      // Many endpoints can share a host (one SaaS receiver for many customers): capping sockets per
      // origin at one endpoint's share would let a hanging endpoint starve its neighbours. The worker
      // already bounds requests per endpoint and overall, so the pool never needs more than that.
      connectionsPerOrigin: config.concurrency,
      responseBodyLimit: config.responseBodyLimit,
      ssrfAllow: config.ssrfAllow,
    });
    this.completions = new GroupCommit(
      // One failed transaction must not fail the others of its batch.
      (batch) => this.recordMany(batch),
      // Outcomes that arrive while a batch is written wait for the next one, so fewer lanes make bigger
      // batches (fewer statements per outcome); a second lane on PostgreSQL keeps a batch of failures
      // (several statements each) from holding up the rest. An endpoint's slot does not wait for this.
      { maxParallel: store.dialect === 'sqlite' ? 1 : 2 },
    );
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.store.events.on('queued', this.onQueued);
    this.loop = this.claimLoop();
  }

  /** Stops claiming, gives back what has not started, and waits (bounded) for attempts in flight. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.store.events.off('queued', this.onQueued);
    this.wake();
    await this.loop;
    const notStarted = [...this.queued.values()].flat();
    this.queued.clear();
    for (const task of notStarted) this.loaded.delete(task.id);
    this.claimed -= notStarted.length;
    // What was held is given back: nothing is left marked for a top-up if the worker starts again.
    this.moreDue.clear();
    this.topUp.clear();
    await this.queue
      .release(notStarted, this.owner)
      .catch((error) => this.log.warn({ err: error }, 'release failed; leases will expire'));
    const deadline = Date.now() + this.config.attemptTimeoutMs + 2_000;
    while (this.claimed > 0 && Date.now() < deadline)
      await new Promise<void>((resolve) => this.idle.add(resolve) && setTimeout(resolve, 50));
    await this.sender.close();
  }

  /** Attempts claimed and not yet recorded (for tests and metrics). */
  get busy(): number {
    return this.claimed;
  }

  /** Characters of payload held by claimed attempts that wait for a slot (what the tests check). */
  get waitingPayloadChars(): number {
    let chars = 0;
    for (const input of this.loaded.values()) chars += input?.payloadJson?.length ?? 0;
    return chars;
  }

  private wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  /** Sleeps up to `ms`; true when woken before the time ran out. */
  private async sleep(ms: number): Promise<boolean> {
    if (this.woken) {
      this.woken = false;
      return true;
    }
    const woken = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      this.wakeUp = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
    this.wakeUp = null;
    this.woken = false;
    return woken;
  }

  private endpointLoad(endpointId: string): number {
    return (this.inFlightByEndpoint.get(endpointId) ?? 0) + (this.queued.get(endpointId)?.length ?? 0);
  }

  /** Claimed attempts one endpoint may hold here. */
  private get endpointShare(): number {
    return this.config.endpointConcurrency * this.wavesHeld;
  }

  /** Claimed attempts this worker may hold: claimed-but-waiting ones are bounded, so one process never hoards the queue. */
  private get maxClaimed(): number {
    return this.config.concurrency * this.wavesHeld;
  }

  /** Attempts this worker may still claim. */
  private get room(): number {
    return this.maxClaimed - this.claimed;
  }

  /**
   * Endpoints the general claim skips: those that may have more due tasks than they hold, whose work comes
   * with their top-ups. Their tasks are older than new work, so a general claim that read them would hand
   * the room an outcome frees back to the backlogs and leave everyone else waiting. Every endpoint holding
   * its whole share is among them: accept() marks it when it gets there, and only a top-up, which claims
   * for an endpoint below its share, unmarks one. Also skipped: endpoints whose secrets this process cannot
   * open (cannotSign), for a minute.
   */
  private leftToTopUps(): string[] {
    const unsignable = [...this.unsignableUntil.keys()].filter((id) => this.unsignable(id) && !this.moreDue.has(id));
    return [...this.moreDue, ...unsignable];
  }

  private async claimLoop(): Promise<void> {
    while (this.running) {
      try {
        // However often top-ups wake the loop, a general claim runs by the idle poll or when the next
        // attempt it could take is due (a retry or another worker's released task sends no wake).
        if (performance.now() >= this.generalClaimBy) this.newWork = true;
        // Top-ups and the general claim take turns at the room: whichever goes first and takes something
        // lets the other go first next time. In a full worker each outcome frees room for about one
        // attempt: always giving it to top-ups kept new work for other endpoints waiting until every
        // backlog here had drained, and always giving it to new work starved the backlogs.
        let full: boolean;
        if (this.generalClaimFirst) {
          const general = await this.generalClaimIfWanted();
          if (general.took > 0) this.generalClaimFirst = false;
          full = general.full;
          await this.topUps();
        } else {
          if ((await this.topUps()) > 0) this.generalClaimFirst = true;
          full = (await this.generalClaimIfWanted()).full;
        }
        if (full) continue;
        // Asleep until the next general claim is due; new work or a drained endpoint wakes us sooner.
        const wait = this.room > 0 ? Math.max(0, this.generalClaimBy - performance.now()) : IDLE_POLL_MS;
        if (!(await this.sleep(wait))) this.newWork = true;
      } catch (error) {
        // The database may be away for a while; keep trying without spinning.
        this.log.warn({ err: error }, 'claim failed; retrying');
        // The claim that failed may have been a general one, whose mark was cleared when it started, or a
        // top-up, whose endpoint (unmarked, so no longer skipped) may have tasks behind the window: the next
        // general claim reads everything.
        this.newWork = true;
        this.lastWholeClaim = -Infinity;
        await this.sleep(1_000);
      }
    }
  }

  /** Runs a general claim if new work may be due and there is room. */
  private async generalClaimIfWanted(): Promise<{ took: number; full: boolean }> {
    return this.newWork && this.room > 0 ? await this.generalClaim() : { took: 0, full: false };
  }

  /**
   * Claims due attempts of every endpoint but those left to their top-ups: how many it took, and whether
   * that was all it asked for (more may be due: claim again at once).
   */
  private async generalClaim(): Promise<{ took: number; full: boolean }> {
    // Cleared before the claim, not after it: work queued while the claim runs sets it again.
    this.newWork = false;
    const skipped = this.leftToTopUps();
    const want = Math.min(this.room, CLAIM_BATCH);
    const claimStarted = Date.now();
    // Usually only what came due in the window since the last claim that took all it could: reading from
    // the oldest task walks past every due task of the skipped endpoints (20 ms at a backlog of 100,000,
    // on every emit). Their tasks behind the window come with their top-ups (a busy endpoint is always in
    // moreDue: accept marks it when it reaches its share). The whole queue once per WHOLE_QUEUE_CLAIM_MS,
    // until such a claim comes back short.
    const started = performance.now();
    const whole = started - this.lastWholeClaim >= WHOLE_QUEUE_CLAIM_MS;
    const tasks = await this.queue.claimLoaded(this.owner, want, {
      skip: skipped,
      dueAfter: whole ? 0 : this.claimWindowFrom,
    });
    this.generalClaimBy = performance.now() + IDLE_POLL_MS;
    if (tasks.length > 0) await this.accept(tasks);
    if (tasks.length === want) {
      this.newWork = true;
      return { took: tasks.length, full: true };
    }
    // A short claim took every due task it could in what it read, so claiming again at once would only
    // find what was queued meanwhile (and that wakes us anyway).
    if (whole) this.lastWholeClaim = started;
    this.claimWindowFrom = claimStarted - LATE_COMMIT_MARGIN_MS;
    if (!this.newWork) {
      const nextDue = await this.queue.nextDueAt(skipped, claimStarted);
      if (nextDue !== null)
        this.generalClaimBy = performance.now() + Math.max(10, Math.min(nextDue - Date.now(), IDLE_POLL_MS));
    }
    return { took: tasks.length, full: false };
  }

  /**
   * An endpoint that drained to one wave gets its next share with a claim of its own, which reads only
   * that endpoint's due tasks instead of scanning past them. Returns how many attempts the top-ups took.
   */
  private async topUps(): Promise<number> {
    let took = 0;
    for (const endpointId of [...this.topUp]) {
      // No room: the endpoint stays marked until an outcome frees some (recorded() wakes the loop). A
      // top-up dropped here would leave its tasks behind the general claim's window.
      if (this.room <= 0) break;
      this.topUp.delete(endpointId);
      if (this.unsignable(endpointId)) continue;
      const want = Math.min(this.room, this.endpointShare - this.endpointLoad(endpointId));
      if (want <= 0) continue;
      // Unmarked until the claim answers: if it fails, the general claim must not go on skipping the endpoint.
      this.moreDue.delete(endpointId);
      const claimed = await this.queue.claimLoaded(this.owner, want, { only: endpointId });
      if (claimed.length === want) this.moreDue.add(endpointId);
      took += claimed.length;
      await this.accept(claimed);
    }
    return took;
  }

  /**
   * Keeps each endpoint's share of a claim and gives the rest back at once: a backlog for one endpoint
   * must not fill the slots every other endpoint needs (the next claim skips that endpoint).
   */
  private async accept(claimed: { task: ClaimedTask; input: AttemptInput | null }[]): Promise<void> {
    const excess: ClaimedTask[] = [];
    for (const { task, input } of claimed) {
      if (this.endpointLoad(task.endpoint_id) < this.endpointShare) {
        // A payload too large to come with the claim (CLAIMED_PAYLOAD_LIMIT) is loaded when the attempt starts.
        if (!input?.payloadLater) this.loaded.set(task.id, input);
        this.enqueue(task);
      } else {
        excess.push(task);
      }
    }
    for (const { task } of claimed)
      if (this.endpointLoad(task.endpoint_id) >= this.endpointShare && !this.unsignable(task.endpoint_id))
        this.moreDue.add(task.endpoint_id);
    // Start what we kept before giving the rest back.
    this.pump();
    if (excess.length > 0) await this.queue.release(excess, this.owner);
  }

  private enqueue(task: ClaimedTask): void {
    this.claimed++;
    const list = this.queued.get(task.endpoint_id);
    if (list) list.push(task);
    else this.queued.set(task.endpoint_id, [task]);
  }

  /** Starts queued attempts while there are free slots, taking endpoints in turn. */
  private pump(): void {
    for (const [endpointId, list] of this.queued) {
      while (
        list.length > 0 &&
        this.inFlight < this.config.concurrency &&
        (this.inFlightByEndpoint.get(endpointId) ?? 0) < this.config.endpointConcurrency
      ) {
        const task = list.shift()!;
        this.inFlight++;
        this.inFlightByEndpoint.set(endpointId, (this.inFlightByEndpoint.get(endpointId) ?? 0) + 1);
        void this.attempt(task).finally(() => this.recorded());
      }
      if (list.length === 0) this.queued.delete(endpointId);
      if (this.inFlight >= this.config.concurrency) break;
    }
  }

  /**
   * The request to the endpoint is over (or was never made): its slot is free for the next one. The
   * outcome may still be waiting to be recorded; that holds the task (`claimed`), not the endpoint's slot.
   */
  private sent(task: ClaimedTask): void {
    this.inFlight--;
    const left = (this.inFlightByEndpoint.get(task.endpoint_id) ?? 1) - 1;
    if (left > 0) this.inFlightByEndpoint.set(task.endpoint_id, left);
    else this.inFlightByEndpoint.delete(task.endpoint_id);
    this.pump();
    // Wake the claim loop for a top-up only when this endpoint is down to one wave and may have more due
    // tasks; waking it on every finish re-ran a claim that scans every due task of a busy endpoint only
    // to skip them all.
    if (
      this.endpointLoad(task.endpoint_id) <= this.config.endpointConcurrency &&
      this.moreDue.has(task.endpoint_id) &&
      !this.topUp.has(task.endpoint_id) &&
      !this.unsignable(task.endpoint_id)
    ) {
      this.topUp.add(task.endpoint_id);
      this.wake();
    }
  }

  /** The attempt is over and its outcome recorded (or left to its lease). */
  private recorded(): void {
    this.claimed--;
    for (const resolve of this.idle) resolve();
    this.idle.clear();
    // The worker just got room again: look for work beyond the endpoints we hold.
    if (this.claimed === this.maxClaimed - 1) {
      this.newWork = true;
      this.wake();
    }
  }

  private async attempt(task: ClaimedTask): Promise<void> {
    try {
      // Taken out first: however this attempt ends, nothing is left behind in `loaded`.
      let input: AttemptInput | null | undefined = this.loaded.get(task.id);
      this.loaded.delete(task.id);
      let result: AttemptResult;
      try {
        // When it was claimed: its lease ran from then (read before the lease is extended below).
        const claimedAt = task.leaseUntil - this.config.leaseMs;
        // A task that waited here long may be near the end of its lease: extend it, or let it go if lost.
        if (task.leaseUntil - Date.now() < this.config.attemptTimeoutMs + LEASE_MARGIN_MS) {
          if (!(await this.queue.extendLease(task, this.owner))) return;
        }
        // Not in `loaded`: its payload was too large to come with the claim.
        if (input === undefined) [input = null] = await this.queue.load([task]);
        else if (input?.endpoint && Date.now() - claimedAt > ENDPOINT_FRESH_MS) {
          const current = await this.endpointNow(input.endpoint);
          // Deleted or disabled while the attempt waited: its task went with it (stopDeliveries), so there
          // is nothing to send or to record.
          if (!current || (current.status === 'disabled' && input.endpoint.status !== 'disabled')) return;
          input.endpoint = current;
        }
        if (!input) return void (await this.queue.drop(task));
        if (input.endpoint?.secrets === null && input.endpoint.status !== 'disabled' && input.payloadJson !== null)
          return await this.cannotSign(task, input);
        result = await this.send(input);
        // Recording needs no payload: let it go now rather than when the outcome's batch is written.
        input.payloadJson = null;
      } finally {
        this.sent(task);
      }
      const owned = await this.completions.submit({ input, result });
      if (owned instanceof Error) throw owned;
      if (!owned)
        this.log.warn(
          { delivery_id: task.delivery_id, attempt: task.attempt_number },
          'task was no longer ours when its outcome was recorded (taken after its lease, cancelled, or written by an earlier try whose answer was lost); outcome kept',
        );
    } catch (error) {
      // Not recorded: the lease runs out and the attempt is made again (at least once, never lost).
      this.log.error(
        { err: error, delivery_id: task.delivery_id },
        'attempt could not be recorded; it will be retried after its lease',
      );
    }
  }

  /**
   * Records one outcome. A deadlock, serialization failure or busy database rolls the transaction back,
   * so trying again is safe; giving up only means the attempt is repeated after its lease.
   */
  private async recordMany(batch: { input: AttemptInput; result: AttemptResult }[]): Promise<(boolean | Error)[]> {
    if (batch.length > 1) {
      try {
        return await this.queue.completeMany(batch, this.owner);
      } catch {
        // One bad outcome must not fail the others: fall back to one transaction each.
      }
    }
    return Promise.all(batch.map(({ input, result }) => this.record(input, result)));
  }

  private async record(input: AttemptInput, result: AttemptResult): Promise<boolean | Error> {
    for (let tries = 1; ; tries++) {
      try {
        const [owned] = await this.queue.completeMany([{ input, result }], this.owner);
        return owned!;
      } catch (error) {
        if (tries >= RECORD_TRIES) return error instanceof Error ? error : new Error(String(error));
        await new Promise((resolve) => setTimeout(resolve, 50 * tries));
      }
    }
  }

  /**
   * The endpoint as it is now (null: deleted), read at most once per ENDPOINT_FRESH_MS for the attempts
   * that start meanwhile; the one claimed is kept if it cannot be read.
   */
  private endpointNow(claimed: NonNullable<AttemptInput['endpoint']>): Promise<AttemptInput['endpoint']> {
    const now = performance.now();
    let cached = this.endpointReads.get(claimed.id);
    if (!cached || now - cached.at > ENDPOINT_FRESH_MS) {
      if (this.endpointReads.size >= 1_000)
        for (const [id, entry] of this.endpointReads)
          if (now - entry.at > ENDPOINT_FRESH_MS) this.endpointReads.delete(id);
      const entry = { at: now, read: this.queue.endpointsNow([claimed.id]).then(([endpoint]) => endpoint ?? null) };
      // A read that failed is not reused: the next attempt reads again.
      entry.read.catch(() => this.endpointReads.get(claimed.id) === entry && this.endpointReads.delete(claimed.id));
      cached = entry;
      this.endpointReads.set(claimed.id, entry);
    }
    return cached.read.catch(() => claimed);
  }

  /**
   * This process cannot open the endpoint's signing secrets: its HERALD_SECRET_KEY is not the one that
   * sealed them. No attempt is made and none recorded (it is not the receiver's failure, and must not use up
   * the delivery's attempts or its endpoint's health). The task goes back to the queue at once, for a worker
   * with the right key, and this worker leaves the endpoint out of its claims for a minute (else it would
   * claim, give back and claim again its whole backlog); if the release fails the task waits for its lease.
   */
  private async cannotSign(task: ClaimedTask, input: AttemptInput): Promise<void> {
    const endpointId = input.endpoint!.id;
    const now = performance.now();
    const logged = this.unsignableUntil.has(endpointId);
    this.unsignableUntil.set(endpointId, now + UNSIGNABLE_PAUSE_MS);
    this.moreDue.delete(endpointId);
    this.topUp.delete(endpointId);
    await this.queue.release([task], this.owner).catch(() => {});
    if (logged) return;
    this.log.error(
      { endpoint_id: endpointId, delivery_id: task.delivery_id },
      "cannot decrypt the endpoint's signing secret: this process's HERALD_SECRET_KEY is not the one that sealed it; its attempts are left to other workers (this one tries again in a minute)",
    );
  }

  /** Whether this worker leaves the endpoint out of its claims (cannotSign), forgetting pauses that ended. */
  private unsignable(endpointId: string): boolean {
    const until = this.unsignableUntil.get(endpointId);
    if (until === undefined) return false;
    if (until > performance.now()) return true;
    this.unsignableUntil.delete(endpointId);
    // Back to the general claims: a claim that ran while it was paused may have marked it, and with nothing
    // of it in flight no finished attempt would ask for its top-up.
    this.moreDue.delete(endpointId);
    return false;
  }

  private async send(input: AttemptInput): Promise<AttemptResult> {
    const failed = (error: string): AttemptResult => ({
      ok: false,
      responseStatus: null,
      responseBody: null,
      error,
      durationMs: 0,
      retryAfterMs: null,
      at: Date.now(),
    });
    if (!input.endpoint) return failed('endpoint was deleted');
    if (input.endpoint.status === 'disabled') return failed('endpoint is disabled');
    if (input.payloadJson === null) return failed('payload is past its retention period');
    // Secrets that do not open never reach here (attempt() leaves those to cannotSign).
    const request = signedRequest(
      input,
      { ...input.endpoint, secrets: input.endpoint.secrets! },
      input.payloadJson,
      Date.now(),
    );
    const result = await this.sender.send(request);
    return { ...result, at: Date.now() };
  }
}
