import {
  type CircuitDefaults,
  type CircuitSettings,
  circuitSettings,
  longerCooldown,
  opens,
} from '../domain/circuit.js';
import { endpointOccurrence } from '../domain/operational.js';
import type { Executor, StoreContext } from './common.js';
import { book } from './queue/index.js';
import { type RaisePolicy, raiseOccurrences, subjectsOf } from './operational.js';
import type { EndpointRow } from './schema.js';

// Endpoints' circuit breakers (src/domain/circuit.ts), on the endpoint rows every worker shares: each
// change is a transaction that reads the row locked, writes the next state only from the state it read,
// and raises endpoint.circuit_opened or endpoint.circuit_closed with it, so two workers make one change
// and one event.

type CircuitColumns = Pick<
  EndpointRow,
  | 'circuit'
  | 'circuit_state'
  | 'circuit_open_until'
  | 'circuit_cooldown_ms'
  | 'circuit_probe_until'
  | 'circuit_window_start'
  | 'circuit_window_attempts'
  | 'circuit_window_failures'
>;

const COLUMNS = [
  'circuit',
  'circuit_state',
  'circuit_open_until',
  'circuit_cooldown_ms',
  'circuit_probe_until',
  'circuit_window_start',
  'circuit_window_attempts',
  'circuit_window_failures',
] as const;

/** A closed circuit with no window: a new endpoint's, and one whose breaker is turned off. */
export const CLOSED_CIRCUIT = {
  circuit_state: 'closed',
  circuit_open_until: null,
  circuit_cooldown_ms: null,
  circuit_probe_until: null,
  circuit_window_start: null,
  circuit_window_attempts: 0,
  circuit_window_failures: 0,
} as const satisfies Partial<EndpointRow>;

/** What a change did: the circuit opened until `openUntil`, closed, or nothing changed. */
export type CircuitChange = { opened: number } | { closed: true } | null;

export class Circuits {
  constructor(
    private readonly ctx: StoreContext,
    private readonly raise: RaisePolicy,
    private readonly defaults: CircuitDefaults,
    private readonly onQueued: () => void,
  ) {}

  /** The settings a stored circuit gives under the service's (null: off). */
  settingsOf(stored: string | null): CircuitSettings {
    return circuitSettings(stored, this.defaults);
  }

  /**
   * Counts finished attempts of a closed circuit's endpoint into its window: a window starts at the first
   * failure and is counted until it is `window` old; then it starts again at the next failure, and
   * successes with no window cost nothing. Opens the circuit when the window's counts say so.
   */
  async count(endpointId: string, attempts: number, failures: number, now: number): Promise<CircuitChange> {
    return this.change(endpointId, async (trx, row, settings) => {
      if (row.circuit_state !== 'closed' || settings === null) return null;
      const current = row.circuit_window_start !== null && row.circuit_window_start > now - settings.windowMs;
      if (!current && failures === 0) {
        if (row.circuit_window_start !== null) await this.write(trx, endpointId, { circuit_window_start: null });
        return null;
      }
      const window = current
        ? {
            attempts: row.circuit_window_attempts + attempts,
            failures: row.circuit_window_failures + failures,
          }
        : { attempts, failures };
      if (opens(window, settings)) return this.open(trx, endpointId, settings.cooldownMs, window, now);
      await this.write(trx, endpointId, {
        circuit_window_start: current ? row.circuit_window_start : now,
        circuit_window_attempts: window.attempts,
        circuit_window_failures: window.failures,
      });
      return null;
    });
  }

  /**
   * Takes an open circuit's probe for `holdMs` once its cooldown is over (or a half-open one whose probe's
   * holder went silent): true for the one worker that gets it.
   */
  async takeProbe(endpointId: string, now: number, holdMs: number): Promise<boolean> {
    const taken = await this.ctx.db
      .updateTable('endpoints')
      .set({ circuit_state: 'half_open', circuit_probe_until: now + holdMs })
      .where('id', '=', endpointId)
      .where((eb) =>
        eb.or([
          eb.and([eb('circuit_state', '=', 'open'), eb('circuit_open_until', '<=', now)]),
          eb.and([eb('circuit_state', '=', 'half_open'), eb('circuit_probe_until', '<=', now)]),
        ]),
      )
      .executeTakeFirst();
    return Number(taken.numUpdatedRows) > 0;
  }

  /**
   * A probe's outcome: delivered closes the circuit (what it held comes due as it was queued, at the
   * endpoint's rate and concurrency); failed opens it again for twice the last cooldown.
   */
  async probed(endpointId: string, ok: boolean, now: number): Promise<CircuitChange> {
    return this.change(endpointId, async (trx, row) => {
      if (row.circuit_state !== 'half_open') return null;
      if (!ok) {
        const cooldown = longerCooldown(
          row.circuit_cooldown_ms ?? this.defaults.cooldownMs,
          this.defaults.maxCooldownMs,
        );
        return this.open(trx, endpointId, cooldown, { attempts: 1, failures: 1 }, now);
      }
      await this.write(trx, endpointId, CLOSED_CIRCUIT);
      // What the circuit held waits at most until the probe's hold ended: due now instead.
      await book.releaseHeld(trx, endpointId, row.circuit_probe_until ?? now, now);
      await this.raiseAbout(trx, endpointId, 'endpoint.circuit_closed', 0, null, now);
      return { closed: true };
    });
  }

  /** Reads the endpoint's circuit locked, and runs `decide` on it in the same transaction. */
  private async change(
    endpointId: string,
    decide: (trx: Executor, row: CircuitColumns, settings: CircuitSettings) => Promise<CircuitChange>,
  ): Promise<CircuitChange> {
    let queued = false;
    const change = await this.ctx.db.transaction().execute(async (trx) => {
      let read = trx.selectFrom('endpoints').select(COLUMNS).where('id', '=', endpointId);
      if (this.ctx.dialect === 'postgres') read = read.forUpdate();
      const row = await read.executeTakeFirst();
      if (!row) return null;
      const made = await decide(trx, row, this.settingsOf(row.circuit));
      queued = made !== null;
      return made;
    });
    if (queued) this.onQueued();
    return change;
  }

  /** Opens the circuit for `cooldownMs`, holds back its queued attempts until then, and raises the event. */
  private async open(
    trx: Executor,
    endpointId: string,
    cooldownMs: number,
    window: { attempts: number; failures: number },
    now: number,
  ): Promise<CircuitChange> {
    const until = now + cooldownMs;
    // No probe out and no window counted, as closed, but open until the cooldown ends.
    await this.write(trx, endpointId, {
      ...CLOSED_CIRCUIT,
      circuit_state: 'open',
      circuit_open_until: until,
      circuit_cooldown_ms: cooldownMs,
    });
    // Every queued attempt no worker holds waits for the cooldown (no attempt used); a held one comes back
    // to a worker that sees the circuit open and gives it back until then.
    await book.holdEndpoint(trx, endpointId, until, now);
    const ratio = window.attempts === 0 ? 0 : window.failures / window.attempts;
    await this.raiseAbout(trx, endpointId, 'endpoint.circuit_opened', ratio, until, now);
    return { opened: until };
  }

  private async write(trx: Executor, endpointId: string, columns: Partial<CircuitColumns>): Promise<void> {
    await trx.updateTable('endpoints').set(columns).where('id', '=', endpointId).execute();
  }

  private async raiseAbout(
    trx: Executor,
    endpointId: string,
    type: 'endpoint.circuit_opened' | 'endpoint.circuit_closed',
    failureRatio: number,
    openUntil: number | null,
    now: number,
  ): Promise<void> {
    const subject = (await subjectsOf(trx, [endpointId])).get(endpointId);
    if (!subject) return;
    const occurrence = endpointOccurrence(type, subject, now);
    occurrence.data.failure_ratio = Math.round(failureRatio * 1000) / 1000;
    occurrence.data.open_until = openUntil === null ? null : new Date(openUntil).toISOString();
    await raiseOccurrences(trx, this.raise, [occurrence], now);
  }
}
