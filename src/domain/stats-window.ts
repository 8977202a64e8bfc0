import { timeOf, unreadableTime } from './date-time.js';

// The window an endpoint's attempt counts cover, and its hourly buckets. Pure: the API and the portal
// read counts from the store and lay them out here.

export const HOUR_MS = 3_600_000;
/** The longest window one request may ask for: 31 days of hourly buckets (744). */
export const MAX_WINDOW_MS = 31 * 24 * HOUR_MS;
/** Hours in the default window: the current hour and the 23 before it. */
export const DEFAULT_HOURS = 24;

/** The start of the UTC hour `ms` falls in. */
export const floorHour = (ms: number) => ms - (((ms % HOUR_MS) + HOUR_MS) % HOUR_MS);

export interface StatsWindow {
  since: number;
  until: number;
}

/**
 * The window [since, until) from the query's date-times. `until` defaults to now; `since` to the start of
 * the 23rd hour before the one `until` falls in, so the default window is 24 hourly buckets ending with the
 * current hour. Returns why the window is refused instead: `until` not after `since`, longer than 31 days.
 */
export function statsWindow(query: { since?: string; until?: string }, now: number): StatsWindow | string {
  const until = query.until === undefined ? now : timeOf(query.until);
  if (until === null) return unreadableTime('until');
  const since = query.since === undefined ? floorHour(until - 1) - (DEFAULT_HOURS - 1) * HOUR_MS : timeOf(query.since);
  if (since === null) return unreadableTime('since');
  if (until <= since) return 'until must be after since';
  if (until - since > MAX_WINDOW_MS) return 'the window from since to until must be at most 31 days';
  return { since, until };
}

export interface Bucket {
  start: number;
  success: number;
  failure: number;
}

/**
 * Every hour the window touches, oldest first, with the counts of the hours that had attempts and zeros for
 * the rest (a chart draws each hour). The first and last hours may be partly outside the window; their
 * counts are of attempts inside it only.
 */
export function hourlyBuckets(window: StatsWindow, counted: readonly Bucket[]): Bucket[] {
  const byStart = new Map(counted.map((bucket) => [bucket.start, bucket]));
  const buckets: Bucket[] = [];
  for (let start = floorHour(window.since); start < window.until; start += HOUR_MS)
    buckets.push(byStart.get(start) ?? { start, success: 0, failure: 0 });
  return buckets;
}

export function totals(buckets: readonly Bucket[]): { success: number; failure: number } {
  return buckets.reduce((sum, b) => ({ success: sum.success + b.success, failure: sum.failure + b.failure }), {
    success: 0,
    failure: 0,
  });
}
