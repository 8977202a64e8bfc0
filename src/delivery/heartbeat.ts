import type { Logger } from 'pino';
import type { WorkerRegistry } from '../store/workers.js';

/** How often a worker records that it is alive. */
export const BEAT_INTERVAL_MS = 1_000;
/**
 * A worker whose last beat is older than this is dead, and its claimed attempts are handed back (decisions:
 * taken over within 10 s). Five missed beats: a live worker's event loop or database round trip never
 * stalls that long in normal operation, and a death is noticed within this plus one beat.
 */
export const DEAD_AFTER_MS = 5_000;

/**
 * A delivery worker's heartbeat: beats every BEAT_INTERVAL_MS, and after each beat hands back the claimed
 * attempts of workers that stopped beating (any live worker does this, so a dead one is taken over by a
 * restarted service or by any other worker sharing the store).
 *
 * A worker reaps only after it has itself beaten without a gap for DEAD_AFTER_MS. After an outage of the
 * database (or a stall of this process) every worker missed its beats alike; waiting that long gives the
 * live ones time to beat again, so they are not taken for dead. A freshly started worker waits as long,
 * which is also long enough for the workers it replaces to have gone stale.
 */
export class Heartbeat {
  private timer: NodeJS.Timeout | null = null;
  private beating: Promise<void> | null = null;
  private stopped = false;
  /** When (performance.now()) the current run of beats without a gap began; null after a failed beat. */
  private beatingSince: number | null = null;
  private lastBeat = -Infinity;

  constructor(
    private readonly registry: WorkerRegistry,
    private readonly owner: string,
    private readonly log: Logger,
    /** Called with the number of attempts handed back or queued, so the local worker can claim them at once. */
    private readonly onReaped: (released: number) => void,
    /** `now` is the clock the gaps are measured on (performance.now unless given). */
    private readonly timing: { intervalMs: number; deadAfterMs: number; now?: () => number } = {
      intervalMs: BEAT_INTERVAL_MS,
      deadAfterMs: DEAD_AFTER_MS,
    },
  ) {}

  /** Beats once (the row exists before the worker claims anything), then every BEAT_INTERVAL_MS. */
  async start(): Promise<void> {
    this.stopped = false;
    await this.tick();
  }

  /** Stops beating and removes the worker's row (call once the worker has released what it held). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.beating;
    await this.registry
      .forget(this.owner)
      .catch((error) => this.log.warn({ err: error }, 'could not remove worker row'));
  }

  private tick(): Promise<void> {
    this.beating = this.beatAndReap().finally(() => {
      this.beating = null;
      if (!this.stopped) this.timer = setTimeout(() => void this.tick(), this.timing.intervalMs).unref();
    });
    return this.beating;
  }

  private async beatAndReap(): Promise<void> {
    try {
      await this.registry.beat(this.owner);
    } catch (error) {
      if (this.beatingSince !== null) this.log.warn({ err: error }, 'heartbeat failed; retrying');
      this.beatingSince = null;
      return;
    }
    const now = this.timing.now?.() ?? performance.now();
    // A beat later than two intervals after the one before is a gap, as a failed beat is.
    if (this.beatingSince === null || now - this.lastBeat > 2 * this.timing.intervalMs) this.beatingSince = now;
    this.lastBeat = now;
    await this.raiseStored();
    if (now - this.beatingSince < this.timing.deadAfterMs) return;
    try {
      const released = await this.registry.reapDead(this.timing.deadAfterMs);
      if (released > 0) {
        this.log.warn({ released }, 'a worker stopped beating: its claimed attempts were handed back');
        this.onReaped(released);
      }
    } catch (error) {
      this.log.warn({ err: error }, 'could not hand back the attempts of dead workers; retrying');
    }
  }

  /**
   * Raises the operational events that outcomes stored and nobody raised (their worker stopped between
   * its commit and the raise), so none waits longer than a beat.
   */
  private async raiseStored(): Promise<void> {
    try {
      const queued = await this.registry.raiseStoredEvents();
      if (queued > 0) this.onReaped(queued);
    } catch (error) {
      this.log.warn({ err: error }, 'could not raise stored operational events; retrying');
    }
  }
}
