import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import assert from 'node:assert/strict';
import { Transformations } from '../../../src/transformations/index.js';
import { MISSING_CODE, Sandbox } from '../../../src/transformations/sandbox.js';
import { startingWebhook } from '../../../src/domain/transformations.js';
import { watchSandboxCalls } from '../../support/sandbox-calls.js';

// A run carries an endpoint's code to a sandbox thread once per version (src/transformations/pool.ts): the
// thread's later runs of it carry their input alone, so a run's copy between threads is bounded by its
// input, not by the endpoint's code (up to 64 KB). A thread that dropped the version (a run that reached a
// limit throws its runtime away) leaves the next run unmade, and the pool sends it again with its code.

const LIMITS = {
  transformationTimeoutMs: 1_000,
  transformationMemoryBytes: 8 * 1024 * 1024,
  transformationThreads: 1,
  maxPayloadBytes: 64 * 1024,
};

/** The same limits for a Sandbox made directly, without a pool. */
const SANDBOX_LIMITS = { timeoutMs: 1_000, memoryBytes: 8 * 1024 * 1024, maxReturnedChars: 128 * 1024 };

const webhook = (data: string) =>
  startingWebhook('https://receiver.example/hook', 'invoice.paid', `{"type":"invoice.paid","data":${data}}`);

// Padding that makes the code large, as a tenant's may be; the handler marks what it saw.
const LARGE = `function handler(w) {
  if (w.payload.data.deep) { const f = (n) => f(n + 1) + 1; return f(0); }
  w.headers["x-n"] = String(w.payload.data.n);
  return w;
}
/* ${'x'.repeat(32 * 1024)} */`;

test("a version's code goes to a thread once; its runs there carry their input alone", {
  timeout: 20_000,
}, async (t) => {
  const seen = watchSandboxCalls(t);
  const pool = new Transformations(LIMITS);
  t.after(() => pool.close());
  const results = [];
  for (let n = 0; n < 40; n++) results.push(pool.apply('ep_1', '1', LARGE, webhook(`{"n":${n}}`), () => null));
  const outcomes = await Promise.all(results);
  assert.deepEqual(
    outcomes.map((o) => ('request' in o ? o.request.headers['x-n'] : o.problem)),
    Array.from({ length: 40 }, (_, n) => String(n)),
  );
  assert.equal(seen.withCode, 1, 'the code went once');
  assert.equal(seen.without, 39);
  // A new version is new code: it goes once too.
  const changed = await pool.apply('ep_1', '2', LARGE.replace('"x-n"', '"x-m"'), webhook('{"n":7}'), () => null);
  assert.ok('request' in changed && changed.request.headers['x-m'] === '7', JSON.stringify(changed));
  assert.equal(seen.withCode, 2);
});

test('a run of a version its thread dropped is sent again with its code, and made', { timeout: 20_000 }, async (t) => {
  const seen = watchSandboxCalls(t);
  const pool = new Transformations(LIMITS);
  t.after(() => pool.close());
  const first = await pool.apply('ep_1', '1', LARGE, webhook('{"n":1}'), () => null);
  assert.ok('request' in first, JSON.stringify(first));
  // Reaching a limit (the stack's) throws the runtime away in the thread; the pool still takes it as sent.
  const deep = await pool.apply('ep_1', '1', LARGE, webhook('{"deep":true}'), () => null);
  assert.ok('problem' in deep && /stack overflow/.test(deep.problem), JSON.stringify(deep));
  const after = await pool.apply('ep_1', '1', LARGE, webhook('{"n":3}'), () => null);
  assert.ok('request' in after, JSON.stringify(after));
  assert.equal(after.request.headers['x-n'], '3');
  assert.equal(seen.withCode, 2, 'sent at first, and again once the thread answered the run unmade');
});

test('a version once stopped stuck takes its later turns alone, so its next stuck run takes no other run down', {
  timeout: 30_000,
}, async (t) => {
  const seen = watchSandboxCalls(t);
  const pool = new Transformations({ ...LIMITS, transformationTimeoutMs: 100 });
  t.after(() => pool.close());
  const OK = 'function handler(w) { w.headers["x-ok"] = "1"; return w; }';
  // Joining a billion holes runs in QuickJS's C code, which checks no deadline: only ending the thread stops it.
  const STUCK = 'function handler(w) { new Array(1e9).join(""); return w; }';
  // The thread's first turn warms it; everything below waits for the next, in the order asked.
  const first = pool.apply('first', '1', OK, webhook('{"n":0}'), () => null);
  const stuck = [1, 2, 3].map((n) => pool.apply('stuck', '1', STUCK, webhook(`{"n":${n}}`), () => null));
  const fine = [1, 2, 3, 4, 5, 6].map((n) => pool.apply('fine', '1', OK, webhook(`{"n":${n}}`), () => null));
  assert.ok('request' in (await first));
  for (const outcome of await Promise.all(fine)) assert.ok('request' in outcome, JSON.stringify(outcome));
  for (const outcome of await Promise.all(stuck))
    assert.match('problem' in outcome ? outcome.problem : '', /^deadline of 100 ms exceeded \(the run was stopped\)/);
  // The fine runs shared the stuck version's first turn and went once more after it; never again, though
  // the stuck version ended two more threads.
  assert.equal(seen.byKey.get('fine@1'), 12);
  assert.equal(seen.byKey.get('stuck@1'), 3 + 2 + 1, 'each stop ends one run; the rest go again');
});

test('a thread that ends between runs fails no run unless it never warmed up; the runs go again on a new thread', {
  timeout: 30_000,
}, async (t) => {
  // Ends the chosen turn's thread instead of posting the turn to it: it ends before beginning a run of it.
  let endTurn = 0;
  let turns = 0;
  const post = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function (this: Worker, message: unknown, ...rest: unknown[]) {
    if (Array.isArray(message) && ++turns === endTurn) return void this.terminate();
    return (post as (...args: unknown[]) => void).call(this, message, ...rest);
  } as typeof post;
  t.after(() => {
    Worker.prototype.postMessage = post;
  });
  const pool = new Transformations(LIMITS);
  t.after(() => pool.close());
  const OK = 'function handler(w) { w.headers["x-ok"] = "1"; return w; }';
  // The first turn of a new thread: it has not warmed up, so its runs fail rather than go again forever.
  endTurn = 1;
  const cold = await pool.apply('a', '1', OK, webhook('{"n":1}'), () => null);
  assert.ok('problem' in cold && cold.problem === 'failed: the sandbox thread stopped', JSON.stringify(cold));
  // A thread that answered a turn and ends before its next: the runs go again on the next thread.
  turns = 0;
  endTurn = 2;
  const warm = await pool.apply('a', '1', OK, webhook('{"n":2}'), () => null);
  assert.ok('request' in warm, JSON.stringify(warm));
  const again = await pool.apply('b', '1', OK, webhook('{"n":3}'), () => null);
  assert.ok('request' in again, JSON.stringify(again));
  assert.equal(again.request.headers['x-ok'], '1');
});

test("a simulation's run carries its code every time and is not kept: the endpoint's kept version stays", {
  timeout: 20_000,
}, async (t) => {
  const seen = watchSandboxCalls(t);
  const pool = new Transformations(LIMITS);
  t.after(() => pool.close());
  const kept = await pool.apply('ep_1', '1', LARGE, webhook('{"n":1}'), () => null);
  assert.ok('request' in kept);
  const DRAFT = LARGE.replace('"x-n"', '"x-draft"');
  for (const n of [2, 3]) {
    const draft = await pool.apply('ep_1', 'draft', DRAFT, webhook(`{"n":${n}}`), () => null, false);
    assert.ok('request' in draft && draft.request.headers['x-draft'] === String(n), JSON.stringify(draft));
  }
  const again = await pool.apply('ep_1', '1', LARGE, webhook('{"n":4}'), () => null);
  assert.ok('request' in again && again.request.headers['x-n'] === '4');
  assert.equal(seen.withCode, 3, 'the kept version once, the draft with each of its runs');
  assert.equal(seen.without, 1, "the kept version's later run went without its code");
});

test('the sandbox compiles a version it is not to keep for that run alone', async () => {
  const sandbox = new Sandbox(SANDBOX_LIMITS, 4);
  const input = webhook('{"n":1}').json;
  const OK = 'function handler(w) { w.headers["x-ok"] = "1"; return w; }';
  for (let i = 0; i < 2; i++) {
    const outcome = await sandbox.run('draft', OK, input, undefined, false);
    assert.ok(outcome !== MISSING_CODE && 'returned' in outcome && outcome.returned?.includes('"x-ok":"1"'));
  }
  // Not kept: a run of that version without its code finds none compiled.
  assert.equal(await sandbox.run('draft', null, input), MISSING_CODE);
  // A version not kept that reaches a limit leaves nothing behind either, and a kept one is kept.
  const spin = await sandbox.run('spin', 'function handler(w) { for (;;) {} }', input, undefined, false);
  assert.ok(spin !== MISSING_CODE && 'error' in spin && /deadline/.test(spin.error));
  assert.ok((await sandbox.run('kept', OK, input)) !== MISSING_CODE);
  assert.notEqual(await sandbox.run('kept', null, input), MISSING_CODE);
  sandbox.close();
});

test('the sandbox keeps as many runtimes as it is given, the least recently used going first', async () => {
  const sandbox = new Sandbox(SANDBOX_LIMITS, 2);
  const input = webhook('{"n":1}').json;
  const code = (name: string) => `function handler(w) { w.headers["x-v"] = "${name}"; return w; }`;
  const ran = async (key: string) => {
    const outcome = await sandbox.run(key, null, input);
    return outcome !== MISSING_CODE && 'returned' in outcome && outcome.returned?.includes(`"x-v":"${key}"`);
  };
  for (const key of ['a', 'b']) assert.ok((await sandbox.run(key, code(key), input)) !== MISSING_CODE);
  // `a` is used again, so `b` is the least recently used when `c` comes.
  assert.ok(await ran('a'));
  assert.ok((await sandbox.run('c', code('c'), input)) !== MISSING_CODE);
  assert.equal(await sandbox.run('b', null, input), MISSING_CODE, 'b was dropped');
  assert.ok(await ran('a'), 'a is kept');
  assert.ok(await ran('c'), 'c is kept');
  sandbox.close();
  assert.equal(await sandbox.run('a', null, input), MISSING_CODE, 'close throws every runtime away');
});
