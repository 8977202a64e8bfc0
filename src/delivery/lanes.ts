import type { ClaimedTask } from '../store/queue/index.js';
import { intervalUs } from '../domain/rate.js';

// One lane per endpoint this worker holds work for: its claimed attempts waiting for a slot, its attempts in
// flight, its capacity, a pause, and whether it is left to top-ups. Every per-endpoint rule of the dispatch
// lives here, so a new one (a rate limit, FIFO, a pause on Retry-After) is a change to a lane.

/**
 * Where a lane stands with its claims:
 * - `idle`: general claims take its tasks.
 * - `maybe-more`: its last claim was cut by its share or by the claim's limit, so more may be due than it
 *   holds. General claims skip it (its tasks are older than new work and come with its top-ups); the
 *   attempt that leaves it with one wave asks for a top-up.
 * - `wants-top-up`: down to one wave with more maybe due; the claim loop tops it up when there is room.
 * - `topping-up`: its top-up claim runs. General claims no longer skip it, so a top-up that fails leaves the
 *   endpoint to them; the claim's answer decides between `maybe-more` (it came back full) and `idle`.
 */
export type TopUpState = 'idle' | 'maybe-more' | 'wants-top-up' | 'topping-up';

const TOP_UP_TRANSITIONS: Readonly<Record<TopUpState, readonly TopUpState[]>> = {
  idle: ['maybe-more'],
  'maybe-more': ['wants-top-up', 'idle'],
  // Back to `maybe-more` when the loop finds no top-up to make (a pause, or a share already full).
  'wants-top-up': ['topping-up', 'maybe-more', 'idle'],
  'topping-up': ['maybe-more', 'idle'],
};

/** Throws unless a lane may move from `from` to `to`. */
export function assertTopUpTransition(from: TopUpState, to: TopUpState): void {
  if (!TOP_UP_TRANSITIONS[from].includes(to)) throw new Error(`lane: illegal top-up transition ${from} -> ${to}`);
}

export class Lane {
  /** Claimed attempts waiting for a slot, first in line first. */
  readonly waiting: ClaimedTask[] = [];
  /** Attempts whose request is under way (the slot frees when the request ends, before the outcome is recorded). */
  inFlight = 0;
  /** Until when (performance.now()) this worker leaves the endpoint out of its claims; 0: not paused. */
  pausedUntil = 0;
  /**
   * Whether the pause holds the endpoint's attempts back (the receiver asked for quiet: what this worker
   * claims meanwhile goes back due when the pause ends), or only this worker's claims (secrets it cannot
   * open: what it claims goes back at once, for another worker).
   */
  holdsBack = false;
  /**
   * Most requests a second to the endpoint, counted across every worker (null: no limit; then nothing of
   * the bookkeeping below runs). The store grants start times spaced for the limit (src/domain/rate.ts);
   * each start uses the earliest, once it has come, and comes at least an interval after this lane's previous
   * start; a granted time missed by more than an interval and a half is dropped. A busy event loop that
   * wakes past several granted times therefore makes them an interval apart, never back to back.
   */
  rateLimit: number | null = null;
  /** Granted start times (Date.now() milliseconds), earliest first. */
  starts: number[] = [];
  /** When this lane last started a rate-limited attempt (Date.now() milliseconds). */
  private lastStartAt = Number.NEGATIVE_INFINITY;
  /** A request for start times is under way. */
  asking = false;
  /** No request for start times before this (performance.now()). */
  askAfter = 0;
  /** A wake-up is set for the next granted start. */
  waking = false;
  private state: TopUpState = 'idle';

  /** Claimed attempts the lane may hold: its waves of `capacity`, one in flight and the rest waiting. */
  readonly share: number;

  constructor(
    readonly endpointId: string,
    /** Attempts in flight at once: one wave (HERALD_ENDPOINT_CONCURRENCY). */
    readonly capacity: number,
    waves: number,
  ) {
    this.share = capacity * waves;
  }

  get topUp(): TopUpState {
    return this.state;
  }

  /** Claimed attempts this lane holds: in flight and waiting. */
  get load(): number {
    return this.inFlight + this.waiting.length;
  }

  /** Whether the next waiting attempt may start now: the gate every per-endpoint bound on starts goes through. */
  canStart(now = Date.now()): boolean {
    if (this.inFlight >= this.capacity) return false;
    if (this.rateLimit === null) return true;
    const late = now - (intervalUs(this.rateLimit) / 1000) * 1.5;
    while (this.starts.length > 0 && this.starts[0]! < late) this.starts.shift();
    const next = this.nextStart;
    return next !== null && next <= now;
  }

  /** A waiting attempt starts: it takes a slot, and a granted start time when the endpoint is rate limited. */
  started(now = Date.now()): void {
    this.inFlight++;
    if (this.rateLimit === null) return;
    this.starts.shift();
    this.lastStartAt = now;
  }

  /** Waiting attempts blocked by the rate limit alone, with no start time granted: worth asking for some. */
  get wantsStarts(): boolean {
    return (
      this.rateLimit !== null &&
      this.waiting.length > 0 &&
      this.inFlight < this.capacity &&
      this.starts.length === 0 &&
      !this.asking &&
      performance.now() >= this.askAfter
    );
  }

  /**
   * When the next start may happen (Date.now() milliseconds): the earliest granted time, and no sooner than an
   * interval after the previous start. Null when none is granted.
   */
  get nextStart(): number | null {
    const granted = this.starts[0];
    if (this.rateLimit === null || granted === undefined) return null;
    return Math.max(granted, this.lastStartAt + intervalUs(this.rateLimit) / 1000);
  }

  /** Whether the endpoint is paused; a pause that ended is forgotten, and its lane goes back to general claims. */
  paused(now?: number): boolean {
    if (this.pausedUntil === 0) return false;
    if (this.pausedUntil > (now ?? performance.now())) return true;
    this.pausedUntil = 0;
    this.holdsBack = false;
    // A top-up that came back full while paused may have marked it, and with nothing in flight no finished
    // attempt would ask for its top-up.
    if (this.state === 'maybe-more') this.move('idle');
    return false;
  }

  /** Nothing held, nothing marked, no pause: the lane can be forgotten. */
  get empty(): boolean {
    return this.inFlight === 0 && this.waiting.length === 0 && this.state === 'idle' && !this.paused();
  }

  /**
   * Moves the lane's top-up state, asserting the move is one of TOP_UP_TRANSITIONS. Lanes makes the moves,
   * keeping its `wantTopUp` in step with the lanes in `wants-top-up`.
   */
  move(to: TopUpState): void {
    assertTopUpTransition(this.state, to);
    this.state = to;
  }
}

export class Lanes {
  private readonly byEndpoint = new Map<string, Lane>();
  /** Lanes with attempts waiting for a slot, in the order they got them: the order dispatch takes them in. */
  readonly ready = new Set<Lane>();
  /** Lanes in `wants-top-up`, in the order they asked. */
  readonly wantTopUp = new Set<Lane>();

  constructor(
    /** Attempts in flight per endpoint (HERALD_ENDPOINT_CONCURRENCY): one wave. */
    private readonly capacity: number,
    /** Waves an endpoint may hold claimed here (wavesHeld). */
    private readonly waves: number,
  ) {}

  get size(): number {
    return this.byEndpoint.size;
  }

  get(endpointId: string): Lane | undefined {
    return this.byEndpoint.get(endpointId);
  }

  /** The endpoint's lane, made if it has none. */
  lane(endpointId: string): Lane {
    let lane = this.byEndpoint.get(endpointId);
    if (!lane) {
      lane = new Lane(endpointId, this.capacity, this.waves);
      this.byEndpoint.set(endpointId, lane);
    }
    return lane;
  }

  /** Whether the endpoint holds less than its share, so a claimed task of it is kept. */
  hasRoom(endpointId: string): boolean {
    const lane = this.byEndpoint.get(endpointId);
    return lane === undefined || lane.load < lane.share;
  }

  /** Queues a claimed task on its lane, which it returns. */
  enqueue(task: ClaimedTask): Lane {
    const lane = this.lane(task.endpoint_id);
    if (lane.waiting.push(task) === 1) this.ready.add(lane);
    return lane;
  }

  /**
   * After a claim: an endpoint that holds its whole share may have more due, so it is left to top-ups (only
   * a top-up, which claims for an endpoint below its share, unmarks it). A paused one is not marked.
   */
  reachedShare(endpointId: string): void {
    const lane = this.byEndpoint.get(endpointId);
    if (lane && lane.topUp === 'idle' && lane.load >= lane.share && !lane.paused()) lane.move('maybe-more');
  }

  /**
   * After an attempt's request ended: whether its lane is down to one wave and may have more due, in which
   * case it now wants a top-up (the claim loop is to be woken). Asking on every finish would re-run a claim
   * that walks every due task of a busy endpoint only to skip them all.
   */
  drained(lane: Lane): boolean {
    if (lane.topUp !== 'maybe-more' || lane.load > lane.capacity || lane.paused()) return false;
    lane.move('wants-top-up');
    this.wantTopUp.add(lane);
    return true;
  }

  /**
   * Starts a top-up: how many attempts to ask for (0: none to make, and the lane is left marked). The lane
   * leaves `wants-top-up` either way.
   */
  startTopUp(lane: Lane, room: number): number {
    this.wantTopUp.delete(lane);
    const want = Math.min(room, lane.share - lane.load);
    if (lane.paused() || want <= 0) {
      lane.move('maybe-more');
      return 0;
    }
    lane.move('topping-up');
    return want;
  }

  /** The top-up's answer: it came back full (more may be due), or short, or it failed (not full). */
  toppedUp(lane: Lane, full: boolean): void {
    lane.move(full ? 'maybe-more' : 'idle');
    this.forgetIfEmpty(lane);
  }

  /**
   * The endpoint is paused until `until` (performance.now()): left out of claims, asking for no top-up. A
   * top-up under way keeps its state; its answer decides it.
   */
  pause(lane: Lane, until: number): void {
    lane.pausedUntil = until;
    lane.holdsBack = false;
    if (lane.topUp === 'wants-top-up') this.wantTopUp.delete(lane);
    if (lane.topUp === 'maybe-more' || lane.topUp === 'wants-top-up') lane.move('idle');
  }

  /**
   * The endpoint asked for quiet (a 429 or 503 with Retry-After): paused until `until` (performance.now()),
   * and its waiting attempts taken out, to be given back due when the pause ends.
   */
  pauseAndTakeWaiting(lane: Lane, until: number): ClaimedTask[] {
    this.pause(lane, Math.max(until, lane.pausedUntil));
    lane.holdsBack = true;
    const tasks = lane.waiting.splice(0);
    this.ready.delete(lane);
    return tasks;
  }

  /**
   * Endpoints the general claim skips: those left to top-ups (marked, or asking for one) and those paused.
   * Lanes found empty on the way (a pause that ended) are forgotten.
   */
  leftToTopUps(): string[] {
    const skipped: string[] = [];
    const now = performance.now();
    for (const lane of this.byEndpoint.values()) {
      if (lane.paused(now) || lane.topUp === 'maybe-more' || lane.topUp === 'wants-top-up')
        skipped.push(lane.endpointId);
      else if (lane.empty) this.byEndpoint.delete(lane.endpointId);
    }
    return skipped;
  }

  /** Forgets a lane that holds nothing, so the lanes stay bounded by the work held and the pauses. */
  forgetIfEmpty(lane: Lane): void {
    if (lane.empty && this.byEndpoint.get(lane.endpointId) === lane) this.byEndpoint.delete(lane.endpointId);
  }

  /** Takes every waiting attempt out (to give back) and unmarks every lane; pauses stay. */
  takeWaiting(): ClaimedTask[] {
    const tasks: ClaimedTask[] = [];
    for (const lane of this.byEndpoint.values()) {
      for (const task of lane.waiting) tasks.push(task);
      lane.waiting.length = 0;
      if (lane.topUp === 'maybe-more' || lane.topUp === 'wants-top-up') lane.move('idle');
      else if (lane.topUp === 'topping-up') throw new Error('lane: a top-up is still under way');
      this.forgetIfEmpty(lane);
    }
    this.ready.clear();
    this.wantTopUp.clear();
    return tasks;
  }
}
