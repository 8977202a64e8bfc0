// What a sandbox thread (thread.ts) and its pool (pool.ts) share besides messages: the run the thread is
// making. A run stuck in the engine's C code sends no message and checks no deadline, so the pool reads
// this to tell a stuck run from a long turn, and which run it is.

/** RunProgress's turn state between runs: the turn was posted and no run has begun (the thread may be warming up). */
export const POSTED = -1;
/** RunProgress's turn state between runs: the thread has answered the turn. */
export const ANSWERED = -2;

/**
 * The run a thread is making, in memory the thread and the pool share, since a thread stuck in the engine
 * sends no message: the run's index in its turn (or POSTED, ANSWERED), and when (Date.now()) it must have
 * ended. The pool writes POSTED as it posts a turn; the thread writes the rest.
 */
export class RunProgress {
  private readonly state: Int32Array;
  private readonly until: Float64Array;

  constructor(readonly buffer = new SharedArrayBuffer(16)) {
    this.state = new Int32Array(buffer, 0, 1);
    this.until = new Float64Array(buffer, 8, 1);
  }

  posted(): void {
    Atomics.store(this.state, 0, POSTED);
  }

  /** Run `index` of the turn begins, and ends by `until` (its compile included). */
  begin(index: number, until: number): void {
    this.until[0] = until;
    Atomics.store(this.state, 0, index);
  }

  /** The run's handler is called now, its code compiled: it ends by its own deadline. */
  calling(deadline: number): void {
    this.until[0] = deadline;
  }

  answered(): void {
    Atomics.store(this.state, 0, ANSWERED);
  }

  /** The run under way (index and end), or the turn's state between runs. */
  read(): { index: number; until: number } | typeof POSTED | typeof ANSWERED {
    const index = Atomics.load(this.state, 0);
    return index >= 0 ? { index, until: this.until[0]! } : (index as typeof POSTED | typeof ANSWERED);
  }
}
