import { parseDuration } from './duration.js';

// An endpoint's own retry schedule (decisions, "Delivery policy"): the delays before each scheduled
// attempt, written as HERALD_RETRY_SCHEDULE writes them. Its length is the endpoint's most scheduled
// attempts; each delay is bounded so that one endpoint cannot park a delivery for longer than a week
// between attempts.

export const MAX_SCHEDULE_STEPS = 20;
export const MAX_SCHEDULE_DELAY_MS = 7 * 86_400_000;

/** Why `schedule` cannot be an endpoint's retry schedule (a message naming the field), or null. */
export function retryScheduleProblem(schedule: readonly string[]): string | null {
  if (schedule.length < 1 || schedule.length > MAX_SCHEDULE_STEPS)
    return `retry_schedule must list 1 to ${MAX_SCHEDULE_STEPS} durations (it has ${schedule.length})`;
  for (const [i, text] of schedule.entries()) {
    const ms = typeof text === 'string' ? parseDuration(text) : null;
    if (ms === null) return `retry_schedule[${i}] must be a duration such as 30s, 5m, 2h or 1d`;
    if (ms > MAX_SCHEDULE_DELAY_MS) return `retry_schedule[${i}] (${text}) is longer than the most, 7d`;
  }
  return null;
}

/** A stored schedule (the column's JSON list, checked when written) as delays in ms; null: none. */
export function scheduleMs(stored: string | null): number[] | null {
  if (stored === null) return null;
  return (JSON.parse(stored) as string[]).map((text) => parseDuration(text) ?? 0);
}

/** A stored schedule as the API shows it: the durations as given; null: the service's. */
export function shownSchedule(stored: string | null): string[] | null {
  return stored === null ? null : (JSON.parse(stored) as string[]);
}
