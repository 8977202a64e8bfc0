// Which part of the due index a general claim reads. Usually only what came due since the last general claim
// that took all it could: reading from the oldest task walks past every due task of the endpoints it skips
// (20 ms at a backlog of 100,000, on every emit). Those endpoints' tasks behind the window come with their
// top-ups (a busy endpoint is always marked: a claim marks it when it reaches its share). The whole queue is
// read once per WHOLE_QUEUE_CLAIM_MS, until such a claim comes back short.

/**
 * The window starts this long before the last general claim that took all it could: an emit stamps its tasks
 * due before it commits, and the commit may land a little later.
 */
export const LATE_COMMIT_MARGIN_MS = 1_000;
/**
 * How often a general claim reads the whole due queue instead of its window, to take what no window saw:
 * a commit later than the margin, a task whose claim by another worker was rolled back. Such a claim
 * walks past every due task of the endpoints it skips (20 ms at a backlog of 100,000; on the embedded
 * store in one process, 20 ms of the event loop): once a second it still showed in the other endpoints'
 * p99 in the bench's neighbour scenario (docs/benchmarks.md).
 */
export const WHOLE_QUEUE_CLAIM_MS = 5_000;

export class ClaimWindow {
  /** General claims take tasks due after this (Date.now(); 0: the whole queue). */
  private from = 0;
  /** When (performance.now(): a clock that never jumps) the last whole-queue claim that took all it could started. */
  private lastWhole = -Infinity;

  /** The claim starting at `started` (performance.now()) reads the whole queue. */
  whole(started: number): boolean {
    return started - this.lastWhole >= WHOLE_QUEUE_CLAIM_MS;
  }

  /** What the claim reads tasks due after (Date.now()): 0 for the whole queue. */
  dueAfter(whole: boolean): number {
    return whole ? 0 : this.from;
  }

  /**
   * The claim that started at `started` (performance.now()) and `claimStarted` (Date.now()) came back short:
   * it took every due task it could in what it read, so the next one reads from its start on.
   */
  tookAll(whole: boolean, started: number, claimStarted: number): void {
    if (whole) this.lastWhole = started;
    this.from = claimStarted - LATE_COMMIT_MARGIN_MS;
  }

  /** The next general claim reads the whole queue (a claim failed: what it missed may be anywhere). */
  reset(): void {
    this.lastWhole = -Infinity;
  }
}
