import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  circuitProblem,
  circuitSettings,
  gate,
  longerCooldown,
  opens,
  PROBE_RECHECK_MS,
} from '../../../src/domain/circuit.js';

// The circuit breaker's rules, without I/O: settings over the service's, when a window opens it, what a
// worker does with an attempt in each state, and how a failed probe lengthens the cooldown.

const DEFAULTS = { failureRatio: 0.5, minAttempts: 20, windowMs: 60_000, cooldownMs: 30_000, maxCooldownMs: 600_000 };
const NOW = 1_000_000;

test("an endpoint's settings override the service's field by field; {enabled: false} is off", () => {
  assert.deepEqual(circuitSettings(null, DEFAULTS), {
    failureRatio: 0.5,
    minAttempts: 20,
    windowMs: 60_000,
    cooldownMs: 30_000,
  });
  assert.deepEqual(circuitSettings(JSON.stringify({ min_attempts: 5, cooldown: '2m' }), DEFAULTS), {
    failureRatio: 0.5,
    minAttempts: 5,
    windowMs: 60_000,
    cooldownMs: 120_000,
  });
  assert.equal(circuitSettings(JSON.stringify({ enabled: false }), DEFAULTS), null);
});

test('a window opens the circuit with enough attempts, at least the failure ratio of them failed', () => {
  const settings = circuitSettings(null, DEFAULTS)!;
  assert.equal(opens({ attempts: 19, failures: 19 }, settings), false, 'too few attempts');
  assert.equal(opens({ attempts: 20, failures: 10 }, settings), true, 'exactly the ratio');
  assert.equal(opens({ attempts: 20, failures: 9 }, settings), false);
});

test('an attempt goes while closed, waits while open or while another probe is out, probes after the cooldown', () => {
  assert.deepEqual(gate({ state: 'closed', openUntil: null, probeUntil: null }, NOW), { kind: 'send' });
  assert.deepEqual(gate({ state: 'open', openUntil: NOW + 500, probeUntil: null }, NOW), {
    kind: 'hold',
    until: NOW + 500,
  });
  assert.deepEqual(gate({ state: 'open', openUntil: NOW, probeUntil: null }, NOW), { kind: 'probe' });
  assert.deepEqual(gate({ state: 'half_open', openUntil: NOW - 1, probeUntil: NOW + 60_000 }, NOW), {
    kind: 'hold',
    until: NOW + PROBE_RECHECK_MS,
  });
  assert.deepEqual(
    gate({ state: 'half_open', openUntil: NOW - 1, probeUntil: NOW - 1 }, NOW),
    { kind: 'probe' },
    'a probe whose worker went silent is taken again',
  );
});

test('a failed probe doubles the cooldown up to the most', () => {
  assert.equal(longerCooldown(30_000, 600_000), 60_000);
  assert.equal(longerCooldown(400_000, 600_000), 600_000);
});

test('bad settings are named', () => {
  assert.equal(circuitProblem({ failure_ratio: 0.5, window: '30s' }, DEFAULTS), null);
  assert.match(circuitProblem({ failure_ratio: 0 }, DEFAULTS)!, /circuit\.failure_ratio/);
  assert.match(circuitProblem({ failure_ratio: 1.01 }, DEFAULTS)!, /circuit\.failure_ratio/);
  assert.match(circuitProblem({ min_attempts: 1.5 }, DEFAULTS)!, /circuit\.min_attempts/);
  assert.match(circuitProblem({ window: '2d' }, DEFAULTS)!, /circuit\.window/);
  assert.match(circuitProblem({ cooldown: '11m' }, DEFAULTS)!, /HERALD_CIRCUIT_MAX_COOLDOWN/);
  assert.match(
    circuitProblem({ enabled: false, min_attempts: 3 } as never, DEFAULTS)!,
    /turns the breaker off and takes no min_attempts/,
  );
});
