import { floorHour, HOUR_MS, type StatsWindow } from './stats-window.js';

// An application's attempts by hour and event type, laid out for the API: the event types with the most
// attempts in the window each by name, the others summed as one. Pure: the store counts, this arranges.

/** Event types an application's stats name; the others are summed as `other`. */
export const MAX_EVENT_TYPES = 20;

export interface Counts {
  success: number;
  failure: number;
}

/** One hour's attempts of one event type, as the store counts them; `eventType` null: the others, summed. */
export interface TypeHourCounts extends Counts {
  start: number;
  eventType: string | null;
}

export interface TypeCounts extends Counts {
  eventType: string;
}

export interface TypeBucket extends Counts {
  start: number;
  /** The named event types with attempts in this hour, in the order of the window's `eventTypes`. */
  eventTypes: TypeCounts[];
  other: Counts;
}

export interface StatsByType {
  /** The named event types, most attempts in the window first (ties by name). */
  eventTypes: TypeCounts[];
  other: Counts;
  /** Every hour the window touches, oldest first, zeros included. */
  buckets: TypeBucket[];
  totals: Counts;
}

const add = (sum: Counts, counts: Counts): Counts => ({
  success: sum.success + counts.success,
  failure: sum.failure + counts.failure,
});
const zero = (): Counts => ({ success: 0, failure: 0 });

export function statsByType(window: StatsWindow, counted: readonly TypeHourCounts[]): StatsByType {
  const named = new Map<string, Counts>();
  let other = zero();
  for (const row of counted) {
    if (row.eventType === null) other = add(other, row);
    else named.set(row.eventType, add(named.get(row.eventType) ?? zero(), row));
  }
  const eventTypes = [...named]
    .map(([eventType, counts]) => ({ eventType, ...counts }))
    .sort(
      (a, b) =>
        b.success + b.failure - (a.success + a.failure) ||
        (a.eventType < b.eventType ? -1 : a.eventType > b.eventType ? 1 : 0),
    );
  const rank = new Map(eventTypes.map((type, i) => [type.eventType, i]));
  const byHour = new Map<number, TypeHourCounts[]>();
  for (const row of counted) byHour.set(row.start, [...(byHour.get(row.start) ?? []), row]);
  const buckets: TypeBucket[] = [];
  for (let start = floorHour(window.since); start < window.until; start += HOUR_MS) {
    const rows = byHour.get(start) ?? [];
    const hourOther = rows.filter((row) => row.eventType === null).reduce(add, zero());
    const types = rows
      .filter((row): row is TypeHourCounts & { eventType: string } => row.eventType !== null)
      .map(({ eventType, success, failure }) => ({ eventType, success, failure }))
      .sort((a, b) => (rank.get(a.eventType) ?? 0) - (rank.get(b.eventType) ?? 0));
    buckets.push({ start, ...types.reduce(add, hourOther), eventTypes: types, other: hourOther });
  }
  return { eventTypes, other, buckets, totals: eventTypes.reduce(add, other) };
}
