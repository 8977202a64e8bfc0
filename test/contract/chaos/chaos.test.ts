import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_STORE } from '../../support/service.js';
import { formatReport, runChaos } from '../../support/chaos.js';

// The chaos suite at CI size (test/support/chaos.ts states the invariants; `npm run chaos` runs it longer
// and with other seeds). It runs once per store, as every file under test/contract/ does: on PostgreSQL two
// API and two worker processes on a server of the test's own that is restarted once; on SQLite an API and
// a worker process on one data directory.

test(`chaos on ${TEST_STORE}: kills under load lose nothing, acknowledge nothing twice, leave nothing stuck`, {
  timeout: 240_000,
}, async (t) => {
  const report = await runChaos({
    store: TEST_STORE,
    seconds: 10,
    minKills: 3,
    seed: 26,
    log: (line) => t.diagnostic(line),
  });
  t.diagnostic(formatReport(report));
  assert.deepEqual(report.violations, [], formatReport(report));
  // The run did what it claims: processes were killed mid-load and messages flowed throughout.
  assert.ok(report.apiKills + report.workerKills >= 3, `${report.apiKills} API and ${report.workerKills} worker kills`);
  if (TEST_STORE === 'postgres') assert.equal(report.databaseRestarts, 1);
  assert.ok(report.acked >= 50, `${report.acked} messages acknowledged`);
  assert.equal(report.delivered, report.expectedArrivals);
  assert.equal(report.pendingWithoutTask, 0);
});
