#!/usr/bin/env node
// Runs one of the project's TypeScript programs (the bench, fuzz, chaos, the bench's tools) compiled:
// builds dist/ (the service the bench starts) and .build/ (src/, test/, bench/, scripts/ as JavaScript),
// then runs the file's .build/ counterpart with the remaining arguments.
//   node scripts/run.mjs bench/run.ts --scenario peers
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join, relative, resolve } from 'node:path';

const root = fileURLToPath(new URL('..', import.meta.url));
const [file, ...args] = process.argv.slice(2);
if (!file?.endsWith('.ts')) {
  console.error('usage: node scripts/run.mjs FILE.ts [ARGS...]');
  process.exit(2);
}
const built = spawnSync(process.execPath, [join(root, 'scripts/build.mjs'), '--all'], { stdio: 'inherit' });
if (built.status !== 0) process.exit(built.status ?? 1);
const compiled = join(root, '.build', relative(root, resolve(file)).replace(/\.ts$/, '.js'));
const run = spawnSync(process.execPath, ['--enable-source-maps', compiled, ...args], { stdio: 'inherit' });
process.exit(run.status ?? 1);
