import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { Heartbeat } from '../../../src/delivery/heartbeat.js';
import type { WorkerRegistry } from '../../../src/store/workers.js';
import { eventually } from '../../support/receiver.js';

// When a worker reaps (src/delivery/heartbeat.ts): only after it has beaten without a gap for the dead-worker
// bound. The heartbeat's clock here advances one interval per beat, so what is checked is the count of
// beats, whatever the machine's timers do.

const INTERVAL_MS = 20;
const DEAD_AFTER_MS = 200;
/** Beats of a run without a gap before the first reap: the bound, in intervals, after the run's first beat. */
const BEATS_TO_REAP = DEAD_AFTER_MS / INTERVAL_MS + 1;

/** A registry that records calls and keeps the heartbeat's clock; `failing` makes beats throw. */
function recordingRegistry() {
  const calls: string[] = [];
  const registry = {
    failing: false as boolean,
    clock: 0,
    calls,
    async beat() {
      registry.clock += INTERVAL_MS;
      calls.push('beat');
      if (registry.failing) throw new Error('database away');
    },
    async reapDead() {
      calls.push('reap');
      return 0;
    },
    async forget() {
      calls.push('forget');
    },
    async raiseStoredEvents() {
      calls.push('raise');
      return 0;
    },
  } satisfies WorkerRegistry & { failing: boolean; calls: string[]; clock: number };
  return registry;
}

/** Calls of `name` in `calls` from `from` on. */
const count = (calls: string[], name: string, from = 0) => calls.slice(from).filter((call) => call === name).length;

test('a heartbeat reaps only after beating without a gap for the dead-worker bound, and forgets its row on stop', async () => {
  const registry = recordingRegistry();
  const heartbeat = new Heartbeat(registry, 'wrk_x', pino({ level: 'silent' }), () => {}, {
    intervalMs: INTERVAL_MS,
    deadAfterMs: DEAD_AFTER_MS,
    now: () => registry.clock,
  });
  await heartbeat.start();
  assert.deepEqual(
    registry.calls,
    ['beat', 'raise'],
    'the first beat, and its raise of stored events, are done before start() returns',
  );
  await eventually(async () => registry.calls.includes('reap'), 30_000, 'the first reap');
  const firstReap = registry.calls.indexOf('reap');
  assert.equal(
    count(registry.calls.slice(0, firstReap), 'beat'),
    BEATS_TO_REAP,
    'reaps once it has beaten for the bound',
  );

  // After failed beats (the database was away) it waits the whole bound again before reaping.
  registry.failing = true;
  const failedFrom = registry.calls.length;
  await eventually(async () => count(registry.calls, 'beat', failedFrom) >= 3, 30_000, 'failed beats');
  registry.failing = false;
  const backFrom = registry.calls.length;
  await eventually(async () => count(registry.calls, 'reap', backFrom) > 0, 30_000, 'a reap after the gap');
  const reapAfterGap = registry.calls.indexOf('reap', backFrom);
  const sinceBack = registry.calls.slice(backFrom, reapAfterGap);
  // The first beat after the flag may still fail (it was under way): the run starts at the first that did not.
  assert.ok(
    count(sinceBack, 'beat') >= BEATS_TO_REAP,
    `no reaping right after a gap (${count(sinceBack, 'beat')} beats)`,
  );
  assert.ok(count(sinceBack, 'raise') >= BEATS_TO_REAP - 1, 'stored events are raised at every beat, after a gap too');

  await heartbeat.stop();
  const stoppedAt = registry.calls.length;
  assert.equal(registry.calls.at(-1), 'forget');
  await new Promise((resolve) => setTimeout(resolve, 4 * INTERVAL_MS));
  assert.equal(registry.calls.length, stoppedAt, 'no beat after stop');
});
