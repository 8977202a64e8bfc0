import { round } from './stats.js';
import type { Context } from './context.js';

// What a drain of a backlog reads from the receiver once the last delivery arrived (or the time ran out):
// the same figures for Herald's workers and for the peers, so their ratios compare like with like.

/** The share of a drain's first arrivals that the steady figures leave out. */
export const LEFT_OUT = 0.2;

export interface DrainFigures {
  /** Deliveries per second from the first arrival to the last. */
  rate: number;
  /**
   * Deliveries per second over the last 80% of arrivals (from the arrival that ends the first fifth to
   * the last): a fresh worker's climb to its steady rate (JIT warm-up) is left out.
   */
  rateLast80: number;
  /** Deliveries per second from the worker's start (a spawn, for Herald) to the last arrival. */
  rateFromStart: number;
  /** From the worker's start to the first arrival. */
  startupMs: number;
  /** Distinct messages that arrived (all of them unless the drain timed out). */
  delivered: number;
}

/**
 * `last` is the count-th arrival's time, or null when the drain did not finish in `limitMs`: such a drain
 * is reported with what arrived (and a note), not dropped.
 */
export async function drainFigures(
  ctx: Context,
  count: number,
  startedAt: number,
  last: number | null,
  limitMs: number,
): Promise<DrainFigures> {
  const arrivals = await ctx.receiver.arrivals();
  const first = Math.min(...arrivals.map((a) => a[1]));
  const unique = new Set(arrivals.map((a) => a[0])).size;
  const end = last ?? Math.max(...arrivals.map((a) => a[1]));
  if (last !== null && unique < count) throw new Error(`receiver got ${unique} distinct messages of ${count}`);
  if (last === null) ctx.log(`  drain not finished after ${limitMs / 1000}s: ${unique} of ${count} delivered`);
  const times = arrivals.map((a) => a[1]).sort((a, b) => a - b);
  const fifth = Math.floor(times.length * LEFT_OUT);
  return {
    rate: round((arrivals.length / (end - first)) * 1000, 0),
    rateLast80: round(((times.length - 1 - fifth) / (end - times[fifth]!)) * 1000, 0),
    rateFromStart: round((arrivals.length / (end - startedAt)) * 1000, 0),
    startupMs: round(first - startedAt, 0),
    delivered: unique,
  };
}
