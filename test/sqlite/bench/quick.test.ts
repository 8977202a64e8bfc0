import { test } from 'node:test';
import assert from 'node:assert/strict';
import { quickBench } from '../../support/bench-run.js';

// `npm run bench -- --quick` end to end, into a temp dir (never over the committed results), for three
// scenarios: the run finishes, and its JSON holds each with numeric figures and the machine info, and its
// table. Timings are benchmarks, never assertions: only the shape of the output is checked. The other
// scenarios share the same harness (processes, load loops, report) and are left to `npm run bench --
// --quick`, which takes two minutes where these take a quarter of that; the bench runs once, from
// test/sqlite/. test/postgres/bench/peers.test.ts drives each peer's drain on a small backlog instead.

const SCENARIOS = ['ingest', 'fanout', 'tracing'];
const TIMEOUT_MS = 240_000;

test('bench --quick writes valid results for the ingest, fan-out and tracing scenarios', {
  timeout: TIMEOUT_MS + 10_000,
}, async (t) => {
  const { results, markdown } = await quickBench(
    t,
    ['--skip-postgres', ...SCENARIOS.flatMap((name) => ['--scenario', name])],
    TIMEOUT_MS,
  );
  assert.equal(results.quick, true);
  assert.equal(typeof results.machine.cores, 'number');
  assert.ok(results.machine.cores >= 1);
  assert.match(results.machine.node, /^v\d+\./);
  assert.ok(!Number.isNaN(Date.parse(results.date)), 'date is an ISO timestamp');
  assert.deepEqual(results.failures, []);
  for (const name of SCENARIOS) {
    const scenario = results.scenarios[name];
    assert.ok(scenario, `scenario ${name} is in the results`);
    assert.ok(Object.keys(scenario.figures).length > 0, `${name} has figures`);
    for (const [key, value] of Object.entries({
      ...scenario.figures,
      ...scenario.baseline,
      ...scenario.ratios,
      peakRssMb: scenario.peakRssMb,
    })) {
      assert.equal(typeof value, 'number', `${name}.${key} is a number`);
      assert.ok(Number.isFinite(value as number), `${name}.${key} is finite (${value})`);
    }
    assert.ok(scenario.peakRssMb > 0, `${name} reports the service's peak RSS`);
    for (const target of scenario.targets) assert.equal(typeof target.pass, 'boolean');
  }
  assert.ok(
    results.scenarios.ingest.baseline.bareRoutePerSec > 0,
    "ingest measures the machine's speed with a bare route",
  );
  assert.ok(
    results.scenarios.ingest.notes.some((note: string) => /^machine: /.test(note)),
    'and says what it scales the target to',
  );
  // The run with a JSON Schema on the event type emitted, and every emit passed the schema.
  assert.ok(results.scenarios.ingest.figures.withSchemaEmitsPerSec > 0, 'ingest runs with a schema too');
  assert.equal(results.scenarios.ingest.figures.withSchemaErrors, 0, 'every emit satisfies the schema');
  for (const name of SCENARIOS) {
    assert.ok(Object.keys(results.scenarios[name].ratios).length > 0, `${name} compares with its baseline`);
  }
  assert.ok(results.scenarios.fanout.ratios.filteredVsPlain > 0, 'fan-out compares filtered with plain');
  assert.ok(markdown.includes('| target |'));
});
