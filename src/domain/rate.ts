// An endpoint's `rate_limit` (requests a second, across every worker sharing the store) as a generic cell
// rate algorithm without burst: starts are spaced at least one interval apart, the interval being a
// second divided by the limit, rounded up to the microsecond. One value per endpoint is kept, its
// theoretical arrival time (`tat`): when the next start may be. Starts spaced so can never put more than
// `limit` of them in any 1,000 ms, wherever the window falls.

/** The least time between two starts, in microseconds: never below a second divided by the limit. */
export const intervalUs = (limit: number): number => Math.ceil(1_000_000 / limit);

/** How far ahead one grant reserves starts: the worker waits for each start time, within this. */
export const GRANT_AHEAD_US = 1_000_000;

export interface Grant {
  /** When each granted start may happen, in microseconds since the epoch, earliest first. */
  startsUs: number[];
  /** The endpoint's theoretical arrival time after this grant. */
  tatUs: number;
}

/**
 * Up to `want` starts for an endpoint whose stored theoretical arrival time is `tatUs` (0: never asked),
 * at `nowUs`: the first at the later of the two, each next one an interval on, none later than
 * GRANT_AHEAD_US from now. Starts a worker was granted and does not make are lost, never given twice:
 * the limit is a ceiling, not a quota.
 */
export function grantStarts(tatUs: number, nowUs: number, limit: number, want: number): Grant {
  const interval = intervalUs(limit);
  const first = Math.max(tatUs, nowUs);
  const room = Math.floor((nowUs + GRANT_AHEAD_US - first) / interval) + 1;
  const count = Math.max(0, Math.min(want, room));
  const startsUs = Array.from({ length: count }, (_, i) => first + i * interval);
  return { startsUs, tatUs: count === 0 ? tatUs : first + count * interval };
}
