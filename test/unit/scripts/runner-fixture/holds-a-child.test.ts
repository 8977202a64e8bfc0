import { test } from 'node:test';
import { spawn } from 'node:child_process';

// A fixture of test/unit/scripts/test-runner.test.ts: with RUNNER_FIXTURE_HOLD set, it starts a child
// that would outlive it and waits, printing both pids, as a file that starts a service process does;
// without it (the suite's own run of this file), it passes at once.
test('a file that starts a child process and waits on it', async () => {
  if (!process.env.RUNNER_FIXTURE_HOLD) return;
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  console.log(`holding: file ${process.pid} child ${child.pid}`);
  await new Promise((resolve) => child.on('exit', resolve));
});
