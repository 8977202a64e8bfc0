import { test } from 'node:test';
import assert from 'node:assert/strict';

// A fixture of test/unit/scripts/test-runner.test.ts: with RUNNER_FIXTURE_FAIL set, one test fails with a
// message the runner's closing summary must repeat; without it (the suite's own run of this file), it passes.
test('a test that passes', () => {});

test('a test that fails when asked', () => {
  assert.equal(process.env.RUNNER_FIXTURE_FAIL ? 'asked to fail' : 'passes', 'passes', 'the fixture failed as asked');
});
