/** How long one address's failures are counted together. */
const WINDOW_MS = 1_000;
/** Addresses tracked before the ones whose window has ended are swept out. */
const SWEEP_AT = 10_000;

/**
 * Failed authentications per client address, counted in this process in windows of one second that start
 * at an address's first failure. An address with `limit` failures in its window is limited until the
 * window ends: auth answers it 429 without looking keys up (a guessed key costs no lookup), and keys the
 * process issued or found lately still pass (Organizations.findKnownKeyOwner).
 */
export class AuthFailures {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly limit: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Milliseconds until `address` may fail again, or 0 when it is not limited. */
  limitedFor(address: string): number {
    const window = this.windows.get(address);
    if (!window) return 0;
    const left = window.start + WINDOW_MS - this.now();
    return window.count >= this.limit && left > 0 ? left : 0;
  }

  /** Counts one failed authentication from `address`. */
  fail(address: string): void {
    const now = this.now();
    const window = this.windows.get(address);
    if (window && window.start + WINDOW_MS > now) {
      window.count++;
      return;
    }
    if (this.windows.size >= SWEEP_AT) this.sweep(now);
    this.windows.set(address, { start: now, count: 1 });
  }

  /** Drops the windows that have ended; a flood from more addresses than SWEEP_AT in one second starts over. */
  private sweep(now: number): void {
    for (const [address, window] of this.windows) if (window.start + WINDOW_MS <= now) this.windows.delete(address);
    if (this.windows.size >= SWEEP_AT) this.windows.clear();
  }
}
