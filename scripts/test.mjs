#!/usr/bin/env node
// Runs every test/**/*.test.ts file with node's test runner through tsx, once per store: the embedded
// SQLite store and PostgreSQL (HERALD_TEST_STORE=postgres), the two passes side by side on the machine's
// two cores (each pass runs its files one at a time); each pass's output is printed whole when it ends.
// HERALD_TEST_SERIAL=1 runs them one after the other, printing as they go. The SDK's tests
// (sdk/test/**/*.test.ts) run in the SQLite pass only: they test the client, which speaks the same HTTP
// to a service on either store. Node 20's --test does not expand globs, so the files are listed here.
// Pass file paths to run only those (on each store in HERALD_TEST_STORES).
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawn, spawnSync } from 'node:child_process';

function find(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'support' ? [] : find(path);
    return name.endsWith('.test.ts') ? [path] : [];
  });
}

/**
 * Each test drops its PostgreSQL database and stops its own PostgreSQL server in t.after, also when it
 * fails. A test process that is killed (timeout, Ctrl-C, OOM) cannot; this removes what such processes
 * left behind, before and after the run. Databases and servers of live processes (someone else's run
 * on this machine) are never touched: their names carry the pid of the process that made them.
 */
function sweepStale() {
  const code = `
    const { sweepStaleDatabases } = await import('./test/support/service.ts');
    const { sweepStaleClusters } = await import('./test/support/pg-cluster.ts');
    const dbs = await sweepStaleDatabases().catch((e) => (console.error('sweep: ' + e.message), []));
    const clusters = await sweepStaleClusters().catch((e) => (console.error('sweep: ' + e.message), []));
    if (dbs.length + clusters.length > 0) console.log('removed leftovers of killed test runs: ' + [...dbs, ...clusters].join(', '));
  `;
  spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    stdio: 'inherit',
    env: process.env,
  });
}

const given = process.argv.slice(2);
const files = given.length > 0 ? given : find('test').sort();
const sdkFiles = given.length > 0 ? [] : find('sdk/test').sort();
const stores = (process.env.HERALD_TEST_STORES ?? 'sqlite,postgres').split(',');
const usesPostgres = stores.includes('postgres');
if (usesPostgres) sweepStale();
const argsFor = (store) => [
  '--import',
  'tsx',
  '--test',
  '--test-concurrency=1',
  '--test-reporter=spec',
  ...files,
  ...(store === 'sqlite' ? sdkFiles : []),
];
const envFor = (store) => ({ ...process.env, HERALD_TEST_STORE: store });
let failed = false;
if (process.env.HERALD_TEST_SERIAL === '1' || stores.length < 2) {
  for (const store of stores) {
    console.log(`\n=== store: ${store} ===`);
    const result = spawnSync(process.execPath, argsFor(store), { stdio: 'inherit', env: envFor(store) });
    if (result.status !== 0) failed = true;
  }
} else {
  const passes = stores.map(
    (store) =>
      new Promise((resolve) => {
        const output = [];
        const child = spawn(process.execPath, argsFor(store), {
          stdio: ['ignore', 'pipe', 'pipe'],
          env: envFor(store),
        });
        child.stdout.on('data', (chunk) => output.push(chunk));
        child.stderr.on('data', (chunk) => output.push(chunk));
        child.on('close', (code) => {
          process.stdout.write(`\n=== store: ${store} ===\n`);
          process.stdout.write(Buffer.concat(output));
          if (code !== 0) failed = true;
          resolve();
        });
      }),
  );
  await Promise.all(passes);
}
if (usesPostgres) sweepStale();
process.exit(failed ? 1 : 0);
