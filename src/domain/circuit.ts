import { formatDuration, parseDuration } from './duration.js';

// An endpoint's circuit breaker (decisions, "Delivery policy"). Its states and their changes:
//
//   closed ──(in the current window, at least min_attempts finished and at least failure_ratio failed)──▶ open
//   open ──(cooldown over; one worker takes the probe)──▶ half_open
//   half_open ──(the probe delivered)──▶ closed
//   half_open ──(the probe failed)──▶ open, for twice the last cooldown (at most HERALD_CIRCUIT_MAX_COOLDOWN)
//
// While open nothing is sent: attempts that come due go back to the queue until the cooldown ends, and
// use no attempt. The window is counted on the endpoint's row from the first failure on (a window of an
// endpoint that only succeeds costs no write), and starts again once it is older than `window`.

export type CircuitState = 'closed' | 'open' | 'half_open';

export interface CircuitDefaults {
  failureRatio: number;
  minAttempts: number;
  windowMs: number;
  cooldownMs: number;
  maxCooldownMs: number;
}

/** An endpoint's `circuit` as the API takes and shows it; null follows the service. */
export type CircuitInput =
  | { enabled: false }
  | { enabled?: true; failure_ratio?: number; min_attempts?: number; window?: string; cooldown?: string };

/** The settings that decide an endpoint's circuit; null: its breaker is off. */
export type CircuitSettings = Omit<CircuitDefaults, 'maxCooldownMs'> | null;

/** Why `input` cannot be an endpoint's circuit (a message naming the field), or null. */
export function circuitProblem(input: CircuitInput, defaults: CircuitDefaults): string | null {
  if (input.enabled === false) {
    const extra = Object.keys(input).filter((key) => key !== 'enabled');
    return extra.length > 0 ? `circuit: {enabled: false} turns the breaker off and takes no ${extra[0]}` : null;
  }
  if (input.failure_ratio !== undefined && !(input.failure_ratio > 0 && input.failure_ratio <= 1))
    return 'circuit.failure_ratio must be above 0 and at most 1';
  if (input.min_attempts !== undefined && !(Number.isInteger(input.min_attempts) && input.min_attempts >= 1))
    return 'circuit.min_attempts must be a whole number of 1 or more';
  for (const field of ['window', 'cooldown'] as const) {
    const text = input[field];
    if (text === undefined) continue;
    const ms = parseDuration(text);
    if (ms === null) return `circuit.${field} must be a duration such as 30s, 5m or 1h`;
    const [least, most] = field === 'window' ? [1000, 86_400_000] : [100, defaults.maxCooldownMs];
    if (ms < least || ms > most)
      return `circuit.${field} must be from ${formatDuration(least)} to ${formatDuration(most)}${field === 'cooldown' ? ' (HERALD_CIRCUIT_MAX_COOLDOWN)' : ''}`;
  }
  return null;
}

/** The settings an endpoint's stored circuit (JSON of CircuitInput, or null) gives under the service's. */
export function circuitSettings(stored: string | null, defaults: CircuitDefaults): CircuitSettings {
  const input = stored === null ? {} : (JSON.parse(stored) as CircuitInput);
  if (input.enabled === false) return null;
  return {
    failureRatio: input.failure_ratio ?? defaults.failureRatio,
    minAttempts: input.min_attempts ?? defaults.minAttempts,
    windowMs: input.window === undefined ? defaults.windowMs : (parseDuration(input.window) ?? defaults.windowMs),
    cooldownMs:
      input.cooldown === undefined ? defaults.cooldownMs : (parseDuration(input.cooldown) ?? defaults.cooldownMs),
  };
}

/** Whether a window's counts open the circuit. */
export function opens(counts: { attempts: number; failures: number }, settings: NonNullable<CircuitSettings>): boolean {
  return counts.attempts >= settings.minAttempts && counts.failures >= counts.attempts * settings.failureRatio;
}

/** The cooldown after a failed probe: twice the last one, at most `maxMs`. */
export function longerCooldown(lastMs: number, maxMs: number): number {
  return Math.min(lastMs * 2, maxMs);
}

/** What a worker does with an attempt of an endpoint whose circuit reads so at `now`. */
export type Gate =
  /** Closed (or no breaker): send. */
  | { kind: 'send' }
  /** Open, or another worker's probe is under way: back to the queue until `until`, no attempt used. */
  | { kind: 'hold'; until: number }
  /** The cooldown is over (or a probe's worker went silent): try to take the probe. */
  | { kind: 'probe' };

export interface CircuitRead {
  state: CircuitState;
  openUntil: number | null;
  /** A half-open circuit's probe is some worker's until then. */
  probeUntil: number | null;
}

/** How long a worker waits before looking again at a circuit whose probe another worker holds. */
export const PROBE_RECHECK_MS = 1000;

export function gate(circuit: CircuitRead, now: number): Gate {
  if (circuit.state === 'closed') return { kind: 'send' };
  if (circuit.state === 'open')
    return circuit.openUntil !== null && circuit.openUntil > now
      ? { kind: 'hold', until: circuit.openUntil }
      : { kind: 'probe' };
  return circuit.probeUntil !== null && circuit.probeUntil > now
    ? { kind: 'hold', until: Math.min(circuit.probeUntil, now + PROBE_RECHECK_MS) }
    : { kind: 'probe' };
}
