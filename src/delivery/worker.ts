import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Store } from '../store/index.js';
import type { AttemptInput, AttemptResult, ClaimedTask, WorkerQueue } from '../store/queue/index.js';
import { randomToken } from '../domain/ids.js';
import { Sender, type SendResult } from './sender.js';
import { carriedHeaders, Publishers } from './destinations/index.js';
import { namesAppUid } from '../domain/destinations.js';
import { shownRequestHeaders, signedRequest } from './request.js';
import { ClaimLoop } from './claim-loop.js';
import { type Lane, Lanes } from './lanes.js';
import { Outcomes } from './outcomes.js';
import { CircuitBreaker } from './circuit-breaker.js';
import { endpointPauseMs } from '../domain/retry.js';
import type { AttemptMetrics } from '../metrics/registry.js';
import type { Tracer } from '../tracing/port.js';
import { traceOf, untraced } from '../tracing/tracer.js';
import { Transformations, transformationError } from '../transformations/index.js';
import { TransformationCodes } from './transformation-codes.js';
import { startingWebhook, type TransformedRequest, transformedUrlProblem } from '../domain/transformations.js';
import { outboundBody } from '../domain/envelope.js';

// The delivery worker, in four small parts: claim due attempts under a lease (claim-loop.ts), dispatch them
// through a lane per endpoint with bounds per endpoint and overall (lanes.ts, and pump here), send, and record
// the outcome (outcomes.ts). A slow endpoint only ever holds its own slots.

/**
 * Waves of attempts (HERALD_ENDPOINT_CONCURRENCY each) an endpoint may hold claimed here: one in flight and
 * the rest waiting. An endpoint is topped up when it is down to one wave, and the top-up must come back
 * before that wave is done or its slots idle. Four waves make a top-up one claim of three waves, where two
 * would make it three claims of one: a claim costs a round trip to PostgreSQL (kernel and driver work on
 * both ends whatever its size), and with the queue on a thread it may wait behind outcomes being recorded.
 * What one worker holds another cannot take, which costs two workers nothing they can measure at 1,000
 * messages/s end to end. The worker's claimed budget is as many waves of HERALD_CONCURRENCY, so hung
 * endpoints use up its request slots and its budget in the same proportion whatever the waves.
 */
const WAVES_HELD = 4;
/** Never fewer: one wave in flight and the next claimed while it runs. */
const MIN_WAVES_HELD = 2;
/**
 * An attempt that starts longer than this after its claim reads its endpoint again first, so that an
 * endpoint deleted, disabled, moved to another URL or given a new secret meanwhile is seen (a claim may
 * wait behind a slow receiver for several attempt timeouts).
 */
const ENDPOINT_FRESH_MS = 1_000;
/** How long a worker leaves out of its claims an endpoint whose signing secrets it cannot open (cannotSign). */
const UNSIGNABLE_PAUSE_MS = 60_000;
/** How soon a rate-limited lane asks again when the store granted no start time (the next is over a second away). */
const STARTS_RETRY_MS = 200;

/** How often a worker moves FIFO endpoints on without being asked (an emit's first parked delivery waits this long at most). */
const FIFO_SWEEP_MS = 250;
/** An attempt that starts with less than its timeout and this much of its lease left extends the lease first. */
const LEASE_MARGIN_MS = 5_000;

/**
 * WAVES_HELD, as many as fit in a lease: the last wave may wait for the ones before it to take their whole
 * timeout, and must still hold its lease when it starts (then it extends it).
 */
export function wavesHeld(config: Config): number {
  const fitting = 1 + Math.floor((config.leaseMs - LEASE_MARGIN_MS) / config.attemptTimeoutMs);
  return Math.max(MIN_WAVES_HELD, Math.min(WAVES_HELD, fitting));
}

export class DeliveryWorker {
  readonly owner = `wrk_${randomToken(12)}`;
  private readonly sender: Sender;
  /** Connections to the destinations that are not HTTP receivers (src/delivery/destinations/). */
  private readonly publishers: Publishers;
  /** Applications' uids as read for destination templates, each for ENDPOINT_FRESH_MS. */
  private readonly appUids = new Map<string, { at: number; read: Promise<string | null> }>();
  /** Endpoints' transformations (src/transformations/), and their code by endpoint, read once per version. */
  private readonly transformations: Transformations;
  private readonly codes: TransformationCodes;
  private readonly outcomes: Outcomes;
  /** Endpoints' circuit breakers: whether an attempt may go, and its outcome counted (circuit-breaker.ts). */
  private readonly breaker: CircuitBreaker;
  /** A lane per endpoint this worker holds attempts of, is topping up, or has paused. */
  private readonly lanes: Lanes;
  private readonly claims: ClaimLoop;
  /** Attempts claimed and not yet recorded: waiting, in flight, or with their outcome being recorded. */
  private claimed = 0;
  /** Requests under way, all endpoints together (HERALD_CONCURRENCY bounds them). */
  private inFlight = 0;
  /** What sending needs, loaded with the claim (null: the delivery is gone; absent: loaded when the attempt starts). */
  private readonly loaded = new Map<string, AttemptInput | null>();
  /** The last read of each endpoint (endpointNow; `at` from performance.now()), shared by the attempts that start within ENDPOINT_FRESH_MS of it. */
  private readonly endpointReads = new Map<string, { at: number; read: Promise<AttemptInput['endpoint']> }>();
  private running = false;
  private fifoTimer: NodeJS.Timeout | null = null;
  /** A FIFO advance is under way (one at a time: the next sweep or outcome catches up). */
  private advancing = false;
  private readonly idle = new Set<() => void>();
  private readonly onQueued = () => this.claims.newWork();
  /** Claimed attempts this worker may hold: claimed-but-waiting ones are bounded, so one process never hoards the queue. */
  private readonly maxClaimed: number;

  constructor(
    private readonly store: Store,
    private readonly config: Config,
    private readonly log: Logger,
    /** The store's queue, or on the embedded store in the `worker` role a QueueThread (queue-thread.ts). */
    private readonly queue: WorkerQueue = store.queue,
    /** Told of each attempt made, as it is made (src/metrics/). */
    private readonly metrics: AttemptMetrics | null = null,
    /** Each attempt's trace context and, when OTEL_* asks, its span (src/tracing/). */
    private readonly tracer: Tracer = untraced,
    /** The process's transformation pool, shared with its API (role `all`); its own when not given. */
    transformations?: Transformations,
  ) {
    const waves = wavesHeld(config);
    this.maxClaimed = config.concurrency * waves;
    this.lanes = new Lanes(config.endpointConcurrency, waves);
    this.claims = new ClaimLoop(
      queue,
      this.owner,
      this.lanes,
      { room: () => this.maxClaimed - this.claimed, accept: (claimed) => this.accept(claimed) },
      log,
    );
    this.sender = new Sender({
      attemptTimeoutMs: config.attemptTimeoutMs,
      // Many endpoints can share a host (one SaaS receiver for many customers): capping sockets per
      // origin at one endpoint's share would let a hanging endpoint starve its neighbours. The worker
      // already bounds requests per endpoint and overall, so the pool never needs more than that.
      connectionsPerOrigin: config.concurrency,
      responseBodyLimit: config.responseBodyLimit,
      ssrfAllow: config.ssrfAllow,
      outboundProxy: config.outboundProxy,
      noProxy: config.noProxy,
    });
    this.publishers = new Publishers({
      attemptTimeoutMs: config.attemptTimeoutMs,
      ssrfAllow: config.ssrfAllow,
      kafkaIdempotent: config.kafkaIdempotent,
    });
    this.outcomes = new Outcomes(queue, this.owner, store.dialect, this.log);
    this.transformations = transformations?.share() ?? new Transformations(config);
    this.codes = new TransformationCodes((endpointId) =>
      store.endpoints.transformation(endpointId).then((t) => (t?.enabled ? t.code : null)),
    );
    this.breaker = new CircuitBreaker(store.circuits, config.leaseMs, log, (endpointId, until) => {
      this.metrics?.circuitOpened();
      const lane = this.lanes.get(endpointId);
      if (lane) this.pauseLane(lane, until - Date.now());
    });
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.store.events.on('queued', this.onQueued);
    this.claims.start();
    this.fifoTimer = setInterval(() => this.advanceFifo(), FIFO_SWEEP_MS).unref();
  }

  /**
   * Unparks the next delivery of FIFO endpoints (src/domain/fifo.ts): those named, right after one of
   * their deliveries settled here, or every endpoint with parked attempts (the sweep every FIFO_SWEEP_MS,
   * which also starts new FIFO endpoints and takes over what another process settled).
   */
  private advanceFifo(endpointIds?: string[]): void {
    if (this.advancing) return;
    this.advancing = true;
    this.queue
      .advanceFifo(endpointIds)
      .then(
        (unparked) => unparked > 0 && this.claims.newWork(),
        (error) => this.log.warn({ err: error }, 'could not move FIFO endpoints on; retrying'),
      )
      .finally(() => {
        this.advancing = false;
      });
  }

  /** Stops claiming, gives back what has not started, and waits (bounded) for attempts in flight. */
  async stop(): Promise<void> {
    // A worker that never started still lets go of its share of the transformation threads.
    if (!this.running) return this.transformations.close();
    this.running = false;
    this.store.events.off('queued', this.onQueued);
    if (this.fifoTimer) clearInterval(this.fifoTimer);
    await this.claims.stop();
    // What was held is given back: no lane is left marked for a top-up if the worker starts again.
    const notStarted = this.lanes.takeWaiting();
    for (const task of notStarted) this.loaded.delete(task.id);
    this.claimed -= notStarted.length;
    await this.queue
      .release(notStarted, this.owner)
      .catch((error) => this.log.warn({ err: error }, 'release failed; leases will expire'));
    const deadline = Date.now() + this.config.attemptTimeoutMs + 2_000;
    while (this.claimed > 0 && Date.now() < deadline)
      await new Promise<void>((resolve) => this.idle.add(resolve) && setTimeout(resolve, 50));
    await Promise.all([
      this.sender.close(),
      this.publishers.close(),
      this.transformations.close(),
      this.breaker.flush(),
    ]);
  }

  /** Attempts claimed and not yet recorded (for tests and metrics). */
  get busy(): number {
    return this.claimed;
  }

  /** Endpoints the worker keeps a lane for (for tests and metrics): bounded by the attempts it holds and its pauses. */
  get lanesHeld(): number {
    return this.lanes.size;
  }

  /** Characters of payload held by claimed attempts that wait for a slot (what the tests check). */
  get waitingPayloadChars(): number {
    let chars = 0;
    for (const input of this.loaded.values()) chars += input?.payloadJson?.length ?? 0;
    return chars;
  }

  /**
   * Keeps each endpoint's share of a claim and gives the rest back at once: a backlog for one endpoint
   * must not fill the slots every other endpoint needs (the next general claim skips that endpoint).
   */
  private async accept(claimed: { task: ClaimedTask; input: AttemptInput | null }[]): Promise<void> {
    const excess: ClaimedTask[] = [];
    const heldBack = new Map<Lane, ClaimedTask[]>();
    for (const { task, input } of claimed) {
      // Claimed just as its endpoint asked for quiet: back to the queue, due when the pause ends.
      const lane = this.lanes.get(task.endpoint_id);
      if (lane?.holdsBack && lane.paused()) {
        const held = heldBack.get(lane);
        if (held) held.push(task);
        else heldBack.set(lane, [task]);
      } else if (this.lanes.hasRoom(task.endpoint_id)) {
        // A payload too large to come with the claim (CLAIMED_PAYLOAD_LIMIT) is loaded when the attempt starts.
        if (!input?.payloadLater) this.loaded.set(task.id, input);
        this.claimed++;
        const queued = this.lanes.enqueue(task);
        // The limit as the claim read it: an update of the endpoint reaches the lane with its next claim.
        if (input?.endpoint) queued.rateLimit = input.endpoint.rateLimit ?? null;
      } else {
        excess.push(task);
      }
    }
    for (const { task } of claimed) this.lanes.reachedShare(task.endpoint_id);
    // Start what we kept before giving the rest back.
    this.pump();
    // Their endpoint reached its share: its top-ups take them again, so their due time stays.
    if (excess.length > 0) await this.queue.release(excess, this.owner, 'as-queued');
    for (const [lane, tasks] of heldBack) await this.queue.release(tasks, this.owner, pauseEnd(lane));
  }

  /**
   * The endpoint answered a 429 or 503 with Retry-After: its lane is paused for that long, and what it
   * holds waiting goes back to the queue due when the pause ends (the outcome's record holds back the
   * endpoint's other queued attempts the same way, for every worker). Requests in flight finish.
   */
  private pauseLane(lane: Lane, pauseMs: number): void {
    const waiting = this.lanes.pauseAndTakeWaiting(lane, performance.now() + pauseMs);
    if (waiting.length === 0) return;
    for (const task of waiting) this.loaded.delete(task.id);
    this.claimed -= waiting.length;
    if (this.claimed < this.maxClaimed) this.claims.newWork();
    void this.queue
      .release(waiting, this.owner, pauseEnd(lane))
      .catch((error) => this.log.warn({ err: error }, 'release of a paused endpoint failed; leases will expire'));
  }

  /** Starts waiting attempts while there are free slots, taking lanes in turn. */
  private pump(): void {
    for (const lane of this.lanes.ready) {
      while (lane.waiting.length > 0 && this.inFlight < this.config.concurrency && lane.canStart()) {
        const task = lane.waiting.shift()!;
        this.inFlight++;
        lane.started();
        void this.attempt(task, lane).finally(() => this.recorded());
      }
      if (lane.waiting.length === 0) this.lanes.ready.delete(lane);
      else if (lane.wantsStarts) this.askStarts(lane);
      else this.wakeForStart(lane);
      if (this.inFlight >= this.config.concurrency) break;
    }
  }

  /**
   * Asks the store for start times of a rate-limited lane: as many as it has waiting, up to the limit.
   * None granted (other workers have the next second): the lane asks again shortly. The waiting attempts
   * neither fail nor use an attempt; they keep their lease (extended when they start, as for any wait).
   */
  private askStarts(lane: Lane): void {
    const limit = lane.rateLimit!;
    lane.asking = true;
    this.queue.takeStarts(lane.endpointId, limit, Math.min(lane.waiting.length, limit)).then(
      (startsUs) => {
        lane.asking = false;
        if (startsUs.length > 0) lane.starts = startsUs.map((us) => us / 1000);
        else this.askAgainIn(lane, STARTS_RETRY_MS);
        this.pump();
      },
      (error) => {
        lane.asking = false;
        this.askAgainIn(lane, 1_000);
        this.log.warn({ err: error, endpoint_id: lane.endpointId }, 'could not take rate-limit start times; retrying');
      },
    );
  }

  /** A rate-limited lane whose next granted start is still to come: dispatch runs again then. */
  private wakeForStart(lane: Lane): void {
    const at = lane.nextStart;
    if (at === null || lane.waking) return;
    lane.waking = true;
    setTimeout(
      () => {
        lane.waking = false;
        this.pump();
      },
      Math.max(0, at - Date.now()),
    ).unref();
  }

  /** No request for the lane's start times for `ms`; then it may ask again, and dispatch runs. */
  private askAgainIn(lane: Lane, ms: number): void {
    lane.askAfter = Number.POSITIVE_INFINITY;
    setTimeout(() => {
      lane.askAfter = 0;
      this.pump();
    }, ms).unref();
  }

  /**
   * The request to the endpoint is over (or was never made): its slot is free for the next one. The
   * outcome may still be waiting to be recorded; that holds the task (`claimed`), not the endpoint's slot.
   */
  private sent(lane: Lane): void {
    this.inFlight--;
    lane.inFlight--;
    this.pump();
    if (this.lanes.drained(lane)) this.claims.wake();
    else this.lanes.forgetIfEmpty(lane);
  }

  /** The attempt is over and its outcome recorded (or left to its lease). */
  private recorded(): void {
    this.claimed--;
    for (const resolve of this.idle) resolve();
    this.idle.clear();
    // The worker just got room again: look for work beyond the endpoints we hold.
    if (this.claimed === this.maxClaimed - 1) this.claims.newWork();
  }

  private async attempt(task: ClaimedTask, lane: Lane): Promise<void> {
    // Taken out first: however this attempt ends, nothing is left behind in `loaded`.
    let input: AttemptInput | null | undefined = this.loaded.get(task.id);
    this.loaded.delete(task.id);
    let probe = false;
    /** The request went (or the attempt failed without one): from here on an error is an outcome not recorded. */
    let made = false;
    try {
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
          return await this.cannotSign(task, lane);
        if (input.endpoint) {
          // Decided at once unless a probe is to be taken (a closed circuit costs no await).
          const decided = this.breaker.passage(input.endpoint, Date.now());
          const passage = decided instanceof Promise ? await decided : decided;
          if (passage.kind === 'hold') return await this.holdForCircuit(task, lane, passage.until);
          probe = passage.kind === 'probe';
        }
        result = await this.send(input, () => {
          made = true;
        });
        made = true;
        this.metrics?.attempted(result, input.delivery.messageId, input.endpoint?.destination?.type ?? 'http');
        const pauseMs = endpointPauseMs(result.responseStatus, result.retryAfterMs);
        if (pauseMs !== null) this.pauseLane(lane, pauseMs);
        // Recording needs no payload: let it go now rather than when the outcome's batch is written.
        input.payloadJson = null;
      } finally {
        this.sent(lane);
      }
      const owned = await this.outcomes.record(input, result);
      if (input.endpoint) this.breaker.outcome(input.endpoint, result, probe);
      // A FIFO endpoint's delivery may have settled: its next one goes at once, not at the next sweep.
      if (input.endpoint?.fifo && task.trigger === 'scheduled') this.advanceFifo([input.endpoint.id]);
      if (owned instanceof Error) throw owned;
      if (!owned)
        this.log.warn(
          { delivery_id: task.delivery_id, attempt: task.attempt_number, trace_id: traceOf(input.delivery).traceId },
          'task was no longer ours when its outcome was recorded (taken after its lease, cancelled, or written by an earlier try whose answer was lost); outcome kept',
        );
    } catch (error) {
      // Not recorded, or not made (the store refused its lease or its input first): the lease runs out and
      // the attempt is made then (at least once, never lost). The two read apart: only the first sends twice.
      this.log.error(
        { err: error, delivery_id: task.delivery_id, trace_id: input ? traceOf(input.delivery).traceId : undefined },
        made
          ? 'attempt could not be recorded; it will be retried after its lease'
          : 'attempt not made: the store refused its lease or its input; it will be made after its lease',
      );
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

  /** An application's uid (a destination template names it), read at most once per ENDPOINT_FRESH_MS. */
  private appUid(appId: string): Promise<string | null> {
    const now = performance.now();
    let cached = this.appUids.get(appId);
    if (!cached || now - cached.at > ENDPOINT_FRESH_MS) {
      if (this.appUids.size >= 1_000) this.appUids.clear();
      cached = { at: now, read: this.store.applications.uidOf(appId).catch(() => null) };
      this.appUids.set(appId, cached);
    }
    return cached.read;
  }

  /**
   * This process cannot open the endpoint's signing secrets: its HERALD_SECRET_KEY is not the one that
   * sealed them. No attempt is made and none recorded (it is not the receiver's failure, and must not use up
   * the delivery's attempts or its endpoint's health). The task goes back to the queue at once, for a worker
   * with the right key, and this worker leaves the endpoint out of its claims for a minute (else it would
   * claim, give back and claim again its whole backlog); if the release fails the task waits for its lease.
   */
  private async cannotSign(task: ClaimedTask, lane: Lane): Promise<void> {
    const logged = lane.pausedUntil !== 0;
    this.lanes.pause(lane, performance.now() + UNSIGNABLE_PAUSE_MS);
    await this.queue.release([task], this.owner).catch(() => {});
    if (logged) return;
    this.log.error(
      { endpoint_id: lane.endpointId, delivery_id: task.delivery_id },
      "cannot decrypt the endpoint's signing secret: this process's HERALD_SECRET_KEY is not the one that sealed it; its attempts are left to other workers (this one tries again in a minute)",
    );
  }

  /**
   * The endpoint's circuit is open (or another worker's probe is under way): nothing is sent. The attempt
   * goes back to the queue due at `until`, using no attempt, and the lane waits until then, giving back
   * what it holds.
   */
  private async holdForCircuit(task: ClaimedTask, lane: Lane, until: number): Promise<void> {
    this.pauseLane(lane, until - Date.now());
    await this.queue.release([task], this.owner, until).catch(() => {});
  }

  /** Makes the attempt's request (or publishes it); `went` is called as soon as it did. */
  private async send(input: AttemptInput, went: () => void): Promise<AttemptResult> {
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
    // The endpoint's transformation decides the request first: it may cancel it, or fail the attempt.
    let transformed: TransformedRequest | null = null;
    const version = input.endpoint.transformationVersion;
    if (version !== null && version !== undefined) {
      const outcome = await this.transform(input, version);
      if (outcome !== null && 'problem' in outcome) return failed(transformationError(outcome.problem));
      transformed = outcome?.request ?? null;
      // Cancelled: nothing is sent, and the delivery ends as delivered.
      if (transformed?.cancel) return { ...failed(''), ok: true, cancelled: true, error: null };
    }
    // The attempt's span is a child of the message's context; the request carries it (W3C traceparent).
    const trace = traceOf(input.delivery);
    const span = this.tracer.attempt(trace, {
      url: input.endpoint.url,
      deliveryId: input.delivery.id,
      endpointId: input.endpoint.id,
      attemptNumber: input.task.attempt_number,
    });
    // Secrets that do not open never reach here (attempt() leaves those to cannotSign).
    const request = signedRequest(
      input,
      { ...input.endpoint, secrets: input.endpoint.secrets! },
      input.payloadJson,
      Date.now(),
      { traceparent: span.traceparent, tracestate: trace.tracestate },
      transformed,
    );
    const destination = input.endpoint.destination;
    // A destination's message carries no HTTP headers of its own: its attempt shows what travelled.
    const sent = destination ? { ...request, headers: carriedHeaders(request.headers) } : request;
    const result: SendResult = destination
      ? await this.publishers.publish(destination, sent, {
          id: input.delivery.messageId,
          eventType: input.delivery.eventType,
          values: {
            event_type: input.delivery.eventType,
            app_id: destination.appId,
            app_uid: namesAppUid(destination.settings) ? ((await this.appUid(destination.appId)) ?? '') : '',
            endpoint_id: input.endpoint.id,
            message_id: input.delivery.messageId,
          },
        })
      : await this.sender.send(request);
    went();
    span.end(result);
    const requestHeaders = shownRequestHeaders(sent, input.delivery.messageId, input.endpoint.sensitiveHeaders);
    const made = transformed
      ? JSON.stringify({ method: transformed.method, url: transformed.url, body: transformed.body })
      : null;
    return { ...result, requestHeaders, request: made, at: Date.now() };
  }

  /**
   * Runs the endpoint's transformation on the request Herald would send: the request to send instead, why
   * there is none, or null when the endpoint has no code (enabled with none, or deleted meanwhile).
   */
  private async transform(
    input: AttemptInput,
    version: number,
  ): Promise<{ request: TransformedRequest } | { problem: string } | null> {
    const endpoint = input.endpoint!;
    const code = await this.codes.get(endpoint.id, version);
    if (code === null) return null;
    const { delivery } = input;
    const body = outboundBody(delivery.eventType, delivery.createdAt, input.payloadJson!);
    return this.transformations.apply(
      endpoint.id,
      String(version),
      code,
      startingWebhook(endpoint.url, delivery.eventType, body),
      (url) =>
        transformedUrlProblem(
          url,
          { type: endpoint.destination?.type ?? 'http', livemode: delivery.livemode, publicOnly: endpoint.publicOnly },
          this.config,
        ),
    );
  }
}

/** When a lane's pause ends, on the wall clock the store's run_at uses (whole milliseconds, as run_at is). */
function pauseEnd(lane: Lane): number {
  return Date.now() + Math.ceil(Math.max(0, lane.pausedUntil - performance.now()));
}
