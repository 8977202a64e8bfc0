import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REPO_ROOT } from '../../support/paths.js';

// dist/ is what `npm start` runs (scripts/build.mjs, run by npm ci and before every test run): each source
// file under src/ has its compiled file and source map there, and an error thrown in dist/ names its src/
// line when the process runs with --enable-source-maps, as `npm start` does.

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

test('every file under src/ has its compiled file and source map in dist/', () => {
  const src = join(REPO_ROOT, 'src');
  const missing = sources(src)
    .map((file) => join(REPO_ROOT, 'dist', relative(src, file)).replace(/\.ts$/, '.js'))
    .filter((file) => !existsSync(file) || !existsSync(`${file}.map`));
  assert.deepEqual(missing, []);
});

test('an error thrown in dist/ names the src/ file and line it comes from', () => {
  const code = `
    const { loadConfig } = await import(${JSON.stringify(join(REPO_ROOT, 'dist', 'config.js'))});
    try { loadConfig({ PORT: 'not-a-port' }); } catch (error) { console.log(error.stack); }
  `;
  const run = spawnSync(process.execPath, ['--enable-source-maps', '--input-type=module', '-e', code], {
    encoding: 'utf8',
  });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /PORT/);
  assert.match(run.stdout, /src\/config\.ts:\d+:\d+/, run.stdout);
  assert.doesNotMatch(run.stdout, /dist\/config\.js/);
});
