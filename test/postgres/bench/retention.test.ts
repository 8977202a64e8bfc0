import { test } from 'node:test';
import assert from 'node:assert/strict';
import { quickBench } from '../../support/bench-run.js';

// `npm run bench -- --quick --scenario retention` end to end, into a temp dir: the history is loaded, the
// oldest day dropped by partition and deleted by rows on a copy, and every figure the comparison needs is
// there. Timings are the benchmark's; only the run and the shape of its results are checked.

const TIMEOUT_MS = 180_000;

test('bench --quick writes the retention scenario: a drop and a row purge of the same day, each measured', {
  timeout: TIMEOUT_MS + 10_000,
}, async (t) => {
  const { results } = await quickBench(t, ['--scenario', 'retention'], TIMEOUT_MS);
  assert.deepEqual(results.failures, []);
  const { figures, baseline, ratios, targets } = results.scenarios.retention;
  assert.equal(figures.deliveries, 20_000);
  assert.equal(figures.partitionsDropped, 4, "the first day's partition of each table");
  // The purge removed the same day's rows: its deliveries, messages and payloads, and its attempt rows.
  assert.equal(figures.rowsDeleted, 3 * 2_000 + 2 * 40);
  for (const value of [
    figures.dropMs,
    figures.dropWalKb,
    baseline.deleteMs,
    baseline.deleteWalKb,
    figures.emitP99Ms,
    figures.emitP99DuringDropMs,
    baseline.emitP99DuringDeleteMs,
    figures.readP50Ms,
    baseline.emptyReadP50Ms,
    baseline.emptyEmitP50Ms,
    figures.bulkLoadSeconds,
    figures.databaseMb,
  ])
    assert.ok(Number.isFinite(value) && value > 0, JSON.stringify({ figures, baseline }));
  assert.equal(Object.keys(ratios).length, 5);
  assert.equal(targets.length, 5);
});
