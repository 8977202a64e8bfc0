import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processAlive } from '../../support/child.js';
import { REPO_ROOT } from '../../support/paths.js';
import { LOADER, lookInside } from '../../support/process-probe.js';
import { eventually } from '../../support/receiver.js';

// `npm start` and the `herald` command as an operator runs them from a checkout: the compiled service in
// dist/ under plain node, on the embedded store.

const SECRET = 'cli-test-secret-key-0123456789-abcdefghijkl';

/** Runs `command` in the checkout with only the environment an operator's shell would pass, plus `env`. */
function started(
  t: TestContext,
  command: string,
  args: string[],
  env: Record<string, string>,
): ChildProcess & { output(): string } {
  const dir = mkdtempSync(join(tmpdir(), 'herald-npm-start-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const child = spawn(command, args, {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: '0',
      HERALD_DATA_DIR: dir,
      HERALD_SECRET_KEY: SECRET,
      HERALD_LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  return Object.assign(child, { output: () => output });
}

/** The pid of the service that `npm start` runs, from its log lines. */
const servicePid = (output: string): number | null => {
  const match = /"pid":(\d+)/.exec(output);
  return match ? Number(match[1]) : null;
};

/** `npm start`, once its service listens: the npm process, and the service's pid (killed when the test ends). */
async function npmStart(t: TestContext, env: Record<string, string>) {
  const npm = started(t, 'npm', ['start'], env);
  t.after(() => {
    const pid = servicePid(npm.output());
    if (pid && processAlive(pid)) process.kill(pid, 'SIGKILL');
  });
  await eventually(
    async () => /listening on http/.test(npm.output()) && servicePid(npm.output()) !== null,
    30_000,
    'the service listening',
  );
  return { npm, pid: servicePid(npm.output())! };
}

test('`npm start` runs dist/ with plain node: no TypeScript loader in its command line, NODE_OPTIONS or hooks, and source maps on', {
  timeout: 60_000,
}, async (t) => {
  // --inspect-port=0: the inspector SIGUSR1 opens takes a free port (lookInside reads it from stderr).
  const { npm, pid } = await npmStart(t, { NODE_OPTIONS: '--inspect-port=0' });
  const look = await lookInside(pid, npm.stderr!);
  assert.equal(look.argv[0], 'node');
  assert.equal(look.argv.at(-2), 'dist/main.js', `the service's command line: ${look.argv.join(' ')}`);
  assert.equal(look.argv.at(-1), 'serve');
  assert.doesNotMatch(look.argv.join(' '), LOADER);
  assert.doesNotMatch(look.nodeOptions, LOADER);
  assert.doesNotMatch(look.execArgv.join(' '), LOADER);
  assert.equal(look.hooks, false, 'no module customization hooks are registered');
  assert.equal(look.sourceMaps, true, 'stack traces name src/ lines');
});

test('the `herald` command runs dist/ the same way', { timeout: 60_000 }, async (t) => {
  const herald = started(t, process.execPath, ['bin/herald.mjs', 'receive', '--port', '0'], {
    NODE_OPTIONS: '--inspect-port=0',
  });
  t.after(() => herald.kill('SIGKILL'));
  await eventually(async () => /Receiving webhooks at/.test(herald.output()), 30_000, 'the receiver listening');
  const look = await lookInside(herald.pid!, herald.stderr!);
  assert.doesNotMatch(look.argv.join(' '), LOADER);
  assert.equal(look.hooks, false, 'no module customization hooks are registered');
  assert.equal(look.sourceMaps, true);
});

test('the look inside a process finds a loader where one is registered', { timeout: 60_000 }, async (t) => {
  // A loader as tsx registers one: module.register from a preloaded module, which also puts --import in
  // the command line.
  const hook = 'data:text/javascript,export async function resolve(s, c, next) { return next(s, c); }';
  const preload = `data:text/javascript,import { register } from 'node:module'; register(${JSON.stringify(hook)});`;
  const child = started(
    t,
    process.execPath,
    ['--import', preload, '-e', "console.log('running'); setInterval(() => {}, 1000)"],
    { NODE_OPTIONS: '--inspect-port=0' },
  );
  t.after(() => child.kill('SIGKILL'));
  // Signalled only once it runs: before Node has installed its SIGUSR1 handler the signal would end it.
  await eventually(async () => /running/.test(child.output()), 30_000, 'the process running');
  const look = await lookInside(child.pid!, child.stderr!);
  assert.match(look.argv.join(' '), LOADER);
  assert.equal(look.hooks, true);
});

test('SIGTERM to `npm start` reaches the service: it shuts down and exits, leaving nothing running', {
  timeout: 60_000,
}, async (t) => {
  const { npm, pid } = await npmStart(t, {});
  assert.notEqual(pid, npm.pid, 'the service runs in a process of its own');
  const outputEnds = new Promise((resolve) => npm.stdout!.once('close', resolve));
  npm.kill('SIGTERM');
  await eventually(async () => !processAlive(pid), 15_000, 'the service process gone');
  await outputEnds; // the service's last lines
  assert.match(npm.output(), /"signal":"SIGTERM","msg":"shutting down"/);
});
