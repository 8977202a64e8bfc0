import assert from 'node:assert/strict';
import { monitorEventLoopDelay } from 'node:perf_hooks';

// What one tenant's input holds the event loop of a service running in this process for: the loop's delay
// is measured while the work runs, and /healthz is asked every 20 ms beside it, as another tenant would.

/**
 * Tries of the same work before a held loop counts: a busy machine can take the core from the process for
 * a moment in any one try, while work that holds the loop itself does so every time.
 */
export const TRIES = 3;

export interface LoopProbe {
  /**
   * Runs `work(round)` while the event loop's delay is measured; the loop is held less than `maxMs` and
   * /healthz answers within twice that, in at least one of three rounds (each round's work names what it
   * creates by its round).
   */
  staysResponsive(what: string, work: (round: number) => Promise<void>): Promise<void>;
}

export function loopProbe(serviceUrl: () => string, maxMs: number): LoopProbe {
  const delay = monitorEventLoopDelay({ resolution: 5 });
  return {
    async staysResponsive(what, work) {
      let best = { held: Number.POSITIVE_INFINITY, health: Number.POSITIVE_INFINITY };
      for (let round = 0; round < TRIES; round++) {
        delay.reset();
        delay.enable();
        let slowestHealth = 0;
        let running = true;
        const health = (async () => {
          while (running) {
            const started = performance.now();
            const reply = await fetch(`${serviceUrl()}/healthz`);
            await reply.arrayBuffer();
            slowestHealth = Math.max(slowestHealth, performance.now() - started);
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        })();
        try {
          await work(round);
        } finally {
          running = false;
          await health;
          delay.disable();
        }
        const held = delay.max / 1e6;
        if (held < best.held) best = { held, health: slowestHealth };
        if (held < maxMs && slowestHealth < maxMs * 2) return;
      }
      assert.ok(best.held < maxMs, `${what}: the event loop was held ${best.held.toFixed(0)} ms`);
      assert.ok(best.health < maxMs * 2, `${what}: /healthz took ${best.health.toFixed(0)} ms`);
    },
  };
}
