#!/usr/bin/env node
// Runs every test/**/*.test.ts file with node's test runner through tsx, once per store:
// the embedded SQLite store, then PostgreSQL (HERALD_TEST_STORE=postgres). Node 20's --test does not
// expand globs, so the files are listed here. Pass file paths to run only those.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

function find(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'support' ? [] : find(path);
    return name.endsWith('.test.ts') ? [path] : [];
  });
}

const files = process.argv.slice(2).length > 0 ? process.argv.slice(2) : find('test').sort();
const stores = (process.env.HERALD_TEST_STORES ?? 'sqlite,postgres').split(',');
let failed = false;
for (const store of stores) {
  console.log(`\n=== store: ${store} ===`);
  const result = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-reporter=spec', ...files],
    { stdio: 'inherit', env: { ...process.env, HERALD_TEST_STORE: store } },
  );
  if (result.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
