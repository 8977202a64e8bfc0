import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../support/paths.js';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = REPO_ROOT;
const biome = (args: string[]) =>
  run(process.execPath, [join(ROOT, 'node_modules/@biomejs/biome/bin/biome'), ...args], { cwd: ROOT }).then(
    () => 0,
    (error: { code: number }) => error.code,
  );

// `npm run lint` (scripts/lint.mjs) checks the files git tracks: a badly formatted scratch file that is
// not tracked leaves it passing, while Biome on the whole directory would fail on it.
test('the lint script checks the tracked files and ignores an untracked, badly formatted one', async () => {
  const scratch = join(ROOT, `scratch-lint-${process.pid}-${process.env.SUITE_STORE || 'unit'}.ts`);
  writeFileSync(scratch, "const   x =1 ; console.log( x )\nlet unused = 'y'\n");
  try {
    assert.equal(await biome(['check', '--error-on-warnings', scratch]), 1, 'the scratch file fails Biome by itself');
    const { stdout, stderr } = await run(process.execPath, [join(ROOT, 'scripts/lint.mjs')], { cwd: ROOT });
    const checked = Number(/Checked (\d+) files/.exec(stdout + stderr)?.[1]);
    assert.ok(checked >= 300, `the tracked files were checked: ${stdout}${stderr}`);
  } finally {
    rmSync(scratch, { force: true });
  }
});
