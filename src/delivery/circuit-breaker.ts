import type { Logger } from 'pino';
import { type CircuitSettings, gate, PROBE_RECHECK_MS } from '../domain/circuit.js';
import type { CircuitChange, Circuits } from '../store/circuits.js';
import type { AttemptInput, AttemptResult } from '../store/queue/index.js';

// A worker's side of the endpoints' circuit breakers (src/domain/circuit.ts, src/store/circuits.ts): before
// an attempt, whether it may go (closed), must wait (open, or another worker's probe under way) or is the
// probe (the one worker whose conditional update took it); after it, its outcome counted into the
// endpoint's window. Counts are gathered for COUNT_EVERY_MS and written once per endpoint, so a failing
// endpoint's attempts add one small transaction per endpoint per interval, not one per attempt; an
// endpoint that only succeeds, with no window open, adds nothing.

/** How long outcomes are gathered before their counts are written. */
const COUNT_EVERY_MS = 50;

type Endpoint = NonNullable<AttemptInput['endpoint']>;

export type Passage = { kind: 'send' } | { kind: 'probe' } | { kind: 'hold'; until: number };

export class CircuitBreaker {
  /** Circuits this worker saw open (or opened), until when: its attempts wait without reading the row again. */
  private readonly openHere = new Map<string, number>();
  private readonly settings = new Map<string, CircuitSettings>();
  private readonly pending = new Map<string, { attempts: number; failures: number }>();
  /**
   * Endpoints whose window this worker knows to be open (it counted a failure), until when: their successes
   * count too, although the claim that read them saw no window yet.
   */
  private readonly windowHere = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly circuits: Pick<Circuits, 'count' | 'takeProbe' | 'probed' | 'settingsOf'>,
    /** How long a probe is its worker's: an attempt's lease. */
    private readonly probeHoldMs: number,
    private readonly log: Logger,
    /** Told when a change here opened a circuit (the worker pauses the endpoint's lane until then). */
    private readonly onOpened: (endpointId: string, until: number) => void,
  ) {}

  /** Whether an attempt of `endpoint` may go now: decided at once, or (a probe to take) by the store. */
  passage(endpoint: Endpoint, now: number): Passage | Promise<Passage> {
    const circuit = endpoint.circuit;
    if (!circuit || endpoint.status === 'disabled' || this.settingsOf(circuit.stored) === null) return { kind: 'send' };
    const seen = this.openHere.get(endpoint.id);
    if (seen !== undefined && seen <= now) this.openHere.delete(endpoint.id);
    const read =
      seen !== undefined && seen > now && circuit.state === 'closed'
        ? { ...circuit, state: 'open' as const, openUntil: seen }
        : circuit;
    const decided = gate(read, now);
    return decided.kind === 'probe' ? this.takeProbe(endpoint.id, now) : decided;
  }

  private async takeProbe(endpointId: string, now: number): Promise<Passage> {
    try {
      if (await this.circuits.takeProbe(endpointId, now, this.probeHoldMs)) return { kind: 'probe' };
    } catch (error) {
      this.log.warn({ err: error, endpoint_id: endpointId }, 'could not take a circuit probe; trying again soon');
    }
    return { kind: 'hold', until: now + PROBE_RECHECK_MS };
  }

  /** Counts an attempt's outcome; a probe's decides its circuit at once. */
  outcome(endpoint: Endpoint, result: AttemptResult, probe: boolean): void {
    const circuit = endpoint.circuit;
    if (!circuit || result.cancelled) return;
    if (probe) {
      void this.circuits
        .probed(endpoint.id, result.ok, Date.now())
        .then((change) => this.changed(endpoint.id, change))
        .catch((error) => this.log.warn({ err: error, endpoint_id: endpoint.id }, 'a circuit probe was not recorded'));
      return;
    }
    const settings = this.settingsOf(circuit.stored);
    if (settings === null || circuit.state !== 'closed') return;
    const here = this.windowHere.get(endpoint.id);
    const windowOpen =
      (circuit.windowStart !== null && circuit.windowStart > result.at - settings.windowMs) ||
      (here !== undefined && here > result.at);
    if (result.ok && !windowOpen && !this.pending.has(endpoint.id)) return;
    if (!result.ok && !windowOpen) {
      if (this.windowHere.size >= 10_000) this.windowHere.clear();
      this.windowHere.set(endpoint.id, result.at + settings.windowMs);
    }
    const counts = this.pending.get(endpoint.id) ?? { attempts: 0, failures: 0 };
    counts.attempts += 1;
    if (!result.ok) counts.failures += 1;
    this.pending.set(endpoint.id, counts);
    this.timer ??= setTimeout(() => void this.flush(), COUNT_EVERY_MS);
  }

  /** Writes the gathered counts (also when the worker stops). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = [...this.pending];
    this.pending.clear();
    for (const [endpointId, { attempts, failures }] of batch) {
      try {
        this.changed(endpointId, await this.circuits.count(endpointId, attempts, failures, Date.now()));
      } catch (error) {
        this.log.warn({ err: error, endpoint_id: endpointId }, "an endpoint's circuit counts were not recorded");
      }
    }
  }

  private changed(endpointId: string, change: CircuitChange): void {
    if (change === null) return;
    this.windowHere.delete(endpointId);
    if ('opened' in change) {
      this.openHere.set(endpointId, change.opened);
      this.onOpened(endpointId, change.opened);
    } else this.openHere.delete(endpointId);
  }

  private settingsOf(stored: string | null): CircuitSettings {
    const key = stored ?? '';
    let settings = this.settings.get(key);
    if (settings === undefined) {
      if (this.settings.size >= 1_000) this.settings.clear();
      settings = this.circuits.settingsOf(stored);
      this.settings.set(key, settings);
    }
    return settings;
  }
}
