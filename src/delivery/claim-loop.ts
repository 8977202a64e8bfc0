import type { Logger } from 'pino';
import type { AttemptInput, ClaimedTask, WorkerQueue } from '../store/queue/index.js';
import { ClaimWindow } from './claim-window.js';
import { isTransient, storeErrorCause } from '../store/errors.js';
import type { Lane, Lanes } from './lanes.js';

// The claim loop: one claim at a time, general claims for new work and top-ups for endpoints drained to one
// wave, taking turns at the room the worker has, and asleep when neither has anything to do.

/** Longest idle sleep; new work in this process (or a NOTIFY on PostgreSQL) wakes the loop sooner. */
export const IDLE_POLL_MS = 500;
/** Most attempts one claim takes. */
export const CLAIM_BATCH = 100;
/** The pause after a failed claim (the database may be away for a while: keep trying without spinning). */
export const CLAIM_RETRY_MS = 1_000;
/**
 * How long the loop waits after a claim failed for a reason a second try soon will not fix (store
 * errors.ts: neither "away" nor "busy"): claiming is the worker's whole job, so it keeps trying, slowly,
 * and says so at error level.
 */
export const CLAIM_BROKEN_RETRY_MS = 10_000;

/**
 * What the loop does. `ready` is the hub between steps: every step starts from it and goes back to it, so a
 * step never begins while another runs; a claim that throws goes to `backing-off` instead.
 */
export type ClaimMode = 'stopped' | 'ready' | 'claiming' | 'topping-up' | 'sleeping' | 'backing-off';

const TRANSITIONS: Readonly<Record<ClaimMode, readonly ClaimMode[]>> = {
  stopped: ['ready'],
  ready: ['claiming', 'topping-up', 'sleeping', 'stopped'],
  claiming: ['ready', 'backing-off'],
  'topping-up': ['ready', 'backing-off'],
  sleeping: ['ready'],
  'backing-off': ['ready'],
};

/** Throws unless the claim loop may go from `from` to `to`. */
export function assertClaimTransition(from: ClaimMode, to: ClaimMode): void {
  if (!TRANSITIONS[from].includes(to)) throw new Error(`claim loop: illegal transition ${from} -> ${to}`);
}

/** What the loop claims for: the worker. */
export interface ClaimHost {
  /** Attempts the worker may still claim. */
  room(): number;
  /** Takes a claim's tasks: keeps each endpoint's share, starts what it can and gives back the rest. */
  accept(claimed: { task: ClaimedTask; input: AttemptInput | null }[]): Promise<void>;
}

export class ClaimLoop {
  private current: ClaimMode = 'stopped';
  private running = false;
  private loop: Promise<void> | null = null;
  private wakeUp: (() => void) | null = null;
  private woken = false;
  /** The next pass runs a general claim: new work was queued, room came back, or the idle poll ran out. */
  private generalDue = true;
  /** When (performance.now()) the next general claim is due at the latest: the idle poll, or the next attempt due. */
  private generalClaimBy = 0;
  /** Whether the next pass runs the general claim before the top-ups (they take turns). */
  private generalFirst = false;
  private readonly window = new ClaimWindow();

  constructor(
    private readonly queue: WorkerQueue,
    private readonly owner: string,
    private readonly lanes: Lanes,
    private readonly host: ClaimHost,
    private readonly log: Logger,
  ) {}

  get mode(): ClaimMode {
    return this.current;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.setMode('ready');
    this.loop = this.run();
  }

  /** Stops after the step under way (a sleep ends at once). */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.wake();
    await this.loop;
  }

  /** Wakes the loop (a lane wants a top-up); a wake while it is not asleep is kept for its next sleep. */
  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  /** New work may be due (queued, or room came back): the next pass runs a general claim. */
  newWork(): void {
    this.generalDue = true;
    this.wake();
  }

  private setMode(to: ClaimMode): void {
    assertClaimTransition(this.current, to);
    this.current = to;
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        // However often top-ups wake the loop, a general claim runs by the idle poll or when the next
        // attempt it could take is due (a retry or another worker's released task sends no wake).
        if (performance.now() >= this.generalClaimBy) this.generalDue = true;
        // Top-ups and the general claim take turns at the room: whichever goes first and takes something
        // lets the other go first next time. In a full worker each outcome frees room for about one
        // attempt: always giving it to top-ups keeps new work for other endpoints waiting until every
        // backlog here has drained, and always giving it to new work starves the backlogs.
        let full: boolean;
        if (this.generalFirst) {
          const general = await this.generalClaimIfDue();
          if (general.took > 0) this.generalFirst = false;
          full = general.full;
          await this.topUps();
        } else {
          if ((await this.topUps()) > 0) this.generalFirst = true;
          full = (await this.generalClaimIfDue()).full;
        }
        if (full) continue;
        // Asleep until the next general claim is due; new work or a drained endpoint wakes the loop sooner.
        const wait = this.host.room() > 0 ? Math.max(0, this.generalClaimBy - performance.now()) : IDLE_POLL_MS;
        this.setMode('sleeping');
        if (!(await this.sleep(wait))) this.generalDue = true;
        this.setMode('ready');
      } catch (error) {
        const transient = isTransient(error);
        if (transient) this.log.warn({ err: error, cause: storeErrorCause(error) }, 'claim failed; retrying');
        else
          this.log.error(
            { err: error, cause: storeErrorCause(error) },
            `claim failed for a reason trying again soon will not fix; retrying in ${CLAIM_BROKEN_RETRY_MS / 1000} s`,
          );
        // The claim that failed may have been a general one, whose mark was cleared when it started, or a
        // top-up, whose endpoint (no longer marked, so no longer skipped) may have tasks behind the window:
        // the next general claim reads everything.
        this.generalDue = true;
        this.window.reset();
        this.setMode('backing-off');
        await this.sleep(transient ? CLAIM_RETRY_MS : CLAIM_BROKEN_RETRY_MS);
        this.setMode('ready');
      }
    }
    this.setMode('stopped');
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

  /** Runs a general claim if new work may be due and there is room. */
  private async generalClaimIfDue(): Promise<{ took: number; full: boolean }> {
    if (!this.generalDue || this.host.room() <= 0) return { took: 0, full: false };
    this.setMode('claiming');
    const result = await this.generalClaim();
    this.setMode('ready');
    return result;
  }

  /**
   * Claims due attempts of every endpoint but those left to their top-ups or paused: how many it took, and
   * whether that was all it asked for (more may be due: claim again at once).
   */
  private async generalClaim(): Promise<{ took: number; full: boolean }> {
    // Cleared before the claim, not after it: work queued while the claim runs sets it again.
    this.generalDue = false;
    const skipped = this.lanes.leftToTopUps();
    const want = Math.min(this.host.room(), CLAIM_BATCH);
    const claimStarted = Date.now();
    const started = performance.now();
    const whole = this.window.whole(started);
    const tasks = await this.queue.claimLoaded(this.owner, want, {
      skip: skipped,
      dueAfter: this.window.dueAfter(whole),
    });
    this.generalClaimBy = performance.now() + IDLE_POLL_MS;
    if (tasks.length > 0) await this.host.accept(tasks);
    if (tasks.length === want) {
      this.generalDue = true;
      return { took: tasks.length, full: true };
    }
    // A short claim took every due task it could in what it read, so claiming again at once would only
    // find what was queued meanwhile (and that wakes the loop anyway).
    this.window.tookAll(whole, started, claimStarted);
    if (!this.generalDue) {
      const nextDue = await this.queue.nextDueAt(skipped, claimStarted);
      if (nextDue !== null)
        this.generalClaimBy = performance.now() + Math.max(10, Math.min(nextDue - Date.now(), IDLE_POLL_MS));
    }
    return { took: tasks.length, full: false };
  }

  /**
   * Each lane that drained to one wave gets its next share with a claim of its own, which reads only that
   * endpoint's due tasks instead of walking past them. Returns how many attempts the top-ups took.
   */
  private async topUps(): Promise<number> {
    if (this.lanes.wantTopUp.size === 0) return 0;
    this.setMode('topping-up');
    let took = 0;
    // The lanes that asked before this pass; one that asks meanwhile wakes the loop for the next.
    for (const lane of [...this.lanes.wantTopUp]) {
      // No room: the lane keeps asking until an outcome frees some (which wakes the loop). A top-up dropped
      // here would leave its tasks behind the general claim's window.
      if (this.host.room() <= 0) break;
      // Paused since it asked: it left `wants-top-up` then.
      if (lane.topUp !== 'wants-top-up') continue;
      took += await this.topUp(lane);
    }
    this.setMode('ready');
    return took;
  }

  private async topUp(lane: Lane): Promise<number> {
    const want = this.lanes.startTopUp(lane, this.host.room());
    if (want === 0) return 0;
    let claimed: Awaited<ReturnType<WorkerQueue['claimLoaded']>>;
    try {
      claimed = await this.queue.claimLoaded(this.owner, want, { only: lane.endpointId });
    } catch (error) {
      // Left to the general claims, which skip it no more.
      this.lanes.toppedUp(lane, false);
      throw error;
    }
    this.lanes.toppedUp(lane, claimed.length === want);
    await this.host.accept(claimed);
    return claimed.length;
  }
}
