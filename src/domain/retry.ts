// When the next attempt of a delivery is due. The schedule lists the delay before each attempt, so its
// length is the maximum number of scheduled attempts; each delay gets ±20% jitter so that a receiver
// that comes back up is not hit by every queued retry in the same instant.
export const JITTER = 0.2;

/** Delay before scheduled attempt `step` (0-based), or null when the schedule is used up. */
export function scheduledDelay(
  scheduleMs: readonly number[],
  step: number,
  random: () => number = Math.random,
): number | null {
  const base = scheduleMs[step];
  if (base === undefined) return null;
  return Math.round(base * (1 - JITTER + 2 * JITTER * random()));
}

// A receiver's Retry-After (on 429 or 503) is honoured, but never past this bound: a misbehaving
// receiver must not park a delivery for days.
export const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/** Reads a Retry-After header (seconds or an HTTP date) as a delay in ms, or null when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, now: number): number | null {
  if (!value) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, MAX_RETRY_AFTER_MS);
  const date = Date.parse(text);
  if (Number.isNaN(date)) return null;
  return Math.min(Math.max(0, date - now), MAX_RETRY_AFTER_MS);
}

/**
 * How long an answer pauses its whole endpoint, or null: a 429 or 503 with Retry-After holds back every
 * delivery to that endpoint until then, not only the one that got it (the receiver asked for quiet, not
 * for one message to wait). The pause uses no attempt and is no failure of the others.
 */
export function endpointPauseMs(responseStatus: number | null, retryAfterMs: number | null): number | null {
  if (responseStatus !== 429 && responseStatus !== 503) return null;
  return retryAfterMs !== null && retryAfterMs > 0 ? retryAfterMs : null;
}

/**
 * The delay before the next scheduled attempt after a failure: the schedule's, or the receiver's
 * Retry-After when that asks for longer. Null when no scheduled attempt is left.
 */
export function nextDelayAfterFailure(
  scheduleMs: readonly number[],
  nextStep: number,
  retryAfterMs: number | null,
  random: () => number = Math.random,
): number | null {
  const delay = scheduledDelay(scheduleMs, nextStep, random);
  if (delay === null) return null;
  return retryAfterMs === null ? delay : Math.max(delay, retryAfterMs);
}
