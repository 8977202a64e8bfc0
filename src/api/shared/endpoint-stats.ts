import { iso } from '../serialize.js';
import { hourlyBuckets, type StatsWindow, totals } from '../../domain/stats-window.js';
import type { Store } from '../../store/index.js';

// An endpoint's attempts by hour over a window (at most 31 days, by default the last 24 hours), counted and
// with the p50 and p95 of their durations: what the console's and the portal's charts draw and the
// endpoints list's success ratio.

/** The stats object of an endpoint the caller may see. */
export async function endpointStats(store: Store, endpointId: string, window: StatsWindow) {
  const buckets = hourlyBuckets(
    window,
    await store.endpointStats.attemptsByHour(endpointId, window.since, window.until),
  );
  const durations = new Map(
    (await store.endpointStats.durationsByHour(endpointId, window.since, window.until)).map((hour) => [
      hour.start,
      hour,
    ]),
  );
  return {
    object: 'endpoint_stats' as const,
    endpoint_id: endpointId,
    since: iso(window.since),
    until: iso(window.until),
    buckets: buckets.map(({ start, success, failure }) => ({
      start: iso(start),
      success,
      failure,
      p50_ms: durations.get(start)?.p50 ?? null,
      p95_ms: durations.get(start)?.p95 ?? null,
    })),
    totals: totals(buckets),
  };
}
