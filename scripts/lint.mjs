#!/usr/bin/env node
// `npm run lint`: Biome's formatting and lint rules over the files git tracks (`git ls-files`), so a scratch
// file in the checkout (an untracked script trying the SDK, say) never fails `npm test`. Files Biome does not
// handle, and those biome.json leaves out, are skipped. Outside a git checkout (an unpacked archive) it checks
// the directory as biome.json describes it.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const biome = createRequire(import.meta.url).resolve('@biomejs/biome/bin/biome');

function trackedFiles() {
  try {
    const listed = execFileSync('git', ['ls-files', '-z'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    // A tracked file deleted in the working tree is not there to check.
    return listed.split('\0').filter((path) => path !== '' && existsSync(`${root}/${path}`));
  } catch {
    return null;
  }
}

const files = trackedFiles();
const args = [
  'check',
  '--error-on-warnings',
  ...(files ? ['--no-errors-on-unmatched', '--files-ignore-unknown=true', ...files] : ['.']),
];
const result = spawnSync(process.execPath, [biome, ...args], { cwd: root, stdio: 'inherit' });
process.exit(result.status ?? 1);
