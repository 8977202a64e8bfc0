import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUILD_ROOT, REPO_ROOT } from './paths.js';

/**
 * Runs the bench compiled beside the tests (`.build/bench/run.js`, or SUITE_BUILD's folder) with `--quick` and `args` into a temp dir (never over the
 * committed results), stopped after `timeoutMs`; fails unless it exits 0. Answers its latest.json and the
 * benchmarks.md it wrote.
 */
export async function quickBench(
  t: TestContext,
  args: string[],
  timeoutMs: number,
): Promise<{ results: any; markdown: string }> {
  const out = mkdtempSync(join(tmpdir(), 'herald-bench-test-'));
  t.after(() => rmSync(out, { recursive: true, force: true }));
  const child = spawn(
    process.execPath,
    [
      '--enable-source-maps',
      join(BUILD_ROOT, 'bench', 'run.js'),
      '--quick',
      ...args,
      '--out',
      out,
      '--time-limit',
      String(timeoutMs / 1000 - 10),
    ],
    { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk));
  const timer = setTimeout(() => child.kill('SIGTERM'), timeoutMs);
  const code = await new Promise<number | null>((done) => child.on('exit', done));
  clearTimeout(timer);
  assert.equal(code, 0, `bench exited with ${code}:\n${output.slice(-3000)}`);
  return {
    results: JSON.parse(readFileSync(join(out, 'latest.json'), 'utf8')),
    markdown: readFileSync(join(out, 'benchmarks.md'), 'utf8'),
  };
}
