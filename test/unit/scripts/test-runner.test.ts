import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { processAlive } from '../../support/child.js';
import { REPO_ROOT } from '../../support/paths.js';

// `npm test` runs each file in a process group of its own; a Ctrl-C (SIGINT to the runner) must not leave
// those files, or the processes they started, running.
test('SIGINT to the test runner kills the files under way and the processes they started', {
  timeout: 60_000,
}, async () => {
  const build = `.build-runner-test-${process.pid}`;
  const runner = spawn(process.execPath, ['scripts/test.mjs', 'test/unit/scripts/runner-fixture'], {
    cwd: REPO_ROOT,
    env: { ...process.env, SUITE_BUILD: build, RUNNER_FIXTURE_HOLD: '1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let pids: { file: number; child: number } | undefined;
  try {
    pids = await new Promise<{ file: number; child: number }>((resolve, reject) => {
      let out = '';
      runner.stdout.setEncoding('utf8');
      runner.stdout.on('data', (chunk: string) => {
        out += chunk;
        const held = /holding: file (\d+) child (\d+)/.exec(out);
        if (held) resolve({ file: Number(held[1]), child: Number(held[2]) });
      });
      runner.on('exit', () => reject(new Error(`the runner ended before the file held its child:\n${out}`)));
    });
    assert.ok(processAlive(pids.file) && processAlive(pids.child));
    const exited = new Promise<number | null>((resolve) => runner.on('exit', (code) => resolve(code)));
    runner.kill('SIGINT');
    assert.equal(await exited, 130);
    const until = Date.now() + 5_000;
    while ((processAlive(pids.file) || processAlive(pids.child)) && Date.now() < until)
      await new Promise((r) => setTimeout(r, 50));
    assert.equal(processAlive(pids.file), false, 'the test file was killed');
    assert.equal(processAlive(pids.child), false, 'the process the test file started was killed');
  } finally {
    runner.kill('SIGKILL');
    // Without the runner's handler, what it started would outlive this test.
    for (const pid of pids ? [pids.file, pids.child] : []) if (processAlive(pid)) process.kill(pid, 'SIGKILL');
    rmSync(join(REPO_ROOT, build), { recursive: true, force: true });
  }
});

// A CI log is often read from its end: the runner's closing summary says which test failed and why, beside
// the file's name, not only that the file failed.
test("the runner's closing lines name a failed test and its message", { timeout: 60_000 }, async () => {
  const build = `.build-runner-test-${process.pid}-fail`;
  try {
    const runner = spawn(
      process.execPath,
      ['scripts/test.mjs', 'test/unit/scripts/runner-fixture/fails-when-asked.test.ts'],
      {
        cwd: REPO_ROOT,
        env: { ...process.env, SUITE_BUILD: build, RUNNER_FIXTURE_FAIL: '1' },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    runner.stdout.setEncoding('utf8');
    runner.stdout.on('data', (chunk: string) => {
      out += chunk;
    });
    const code = await new Promise<number | null>((resolve) => runner.on('exit', (exit) => resolve(exit)));
    assert.equal(code, 1);
    const closing = out.trimEnd().split('\n').slice(-14);
    const named = closing.findIndex((line) => line.startsWith('FAILED ') && line.includes('fails-when-asked'));
    assert.ok(named >= 0, `the closing lines name the file:\n${closing.join('\n')}`);
    const why = closing.slice(named + 1).join('\n');
    assert.match(why, /✖ a test that fails when asked/);
    assert.match(why, /the fixture failed as asked/);
    assert.doesNotMatch(why, /node:internal|node:async_hooks/, 'no frames of Node itself');
    assert.match(closing.at(-1) ?? '', /^suite: 1 passed, 1 failed, 0 skipped$/);
  } finally {
    rmSync(join(REPO_ROOT, build), { recursive: true, force: true });
  }
});
