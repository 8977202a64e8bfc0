import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Transformations } from '../../../src/transformations/index.js';
import { startingWebhook } from '../../../src/domain/transformations.js';

// Hostile code in the transformation sandbox (src/transformations/): each case is refused or fails its run
// with words saying why, nothing of the host is reachable, no run outlives its deadline, and the sandbox
// keeps serving every other endpoint afterwards.

const LIMITS = {
  transformationTimeoutMs: 300,
  transformationMemoryBytes: 8 * 1024 * 1024,
  transformationThreads: 2,
  maxPayloadBytes: 64 * 1024,
};

const webhook = () =>
  startingWebhook('https://receiver.example/hook', 'invoice.paid', '{"type":"invoice.paid","data":{"n":1}}');

async function run(sandbox: Transformations, group: string, code: string) {
  return sandbox.apply(group, '1', code, webhook(), () => null);
}

test('hostile code fails cleanly, reaches nothing of the host, and the sandbox serves others after it', async (t) => {
  const sandbox = new Transformations(LIMITS);
  t.after(() => sandbox.close());
  const cases: [string, string, RegExp][] = [
    ['endless loop', 'function handler(w) { while (true) {} }', /^deadline of 300 ms exceeded/],
    [
      'memory bomb',
      'function handler(w) { const a = []; for (;;) a.push(new Array(1e5).fill(1)); }',
      /memory limit of 8 MB exceeded|deadline/,
    ],
    ['deep recursion', 'function handler(w) { function f() { return f() + 1; } return f(); }', /stack overflow/],
    ['require', 'function handler(w) { require("fs"); return w; }', /threw ReferenceError: .*require/],
    ['process', 'function handler(w) { w.payload = process.env; return w; }', /threw ReferenceError: .*process/],
    ['fetch', 'function handler(w) { fetch("http://127.0.0.1/"); return w; }', /threw ReferenceError: .*fetch/],
    ['timers', 'function handler(w) { setTimeout(() => {}, 1); return w; }', /threw ReferenceError: .*setTimeout/],
    [
      'huge payload',
      'function handler(w) { w.payload = "x".repeat(70000); return w; }',
      /bad return value: payload is larger than 65536 bytes/,
    ],
    // Past the payload limit and room for the URL and headers, the sandbox refuses the text unread: it is
    // never copied to the event loop and parsed there.
    [
      'huger payload',
      'function handler(w) { w.payload = "x".repeat(1e6); return w; }',
      /^bad return value: the webhook returned is larger than 131072 bytes$/,
    ],
    ['no handler', 'const handler = 1;', /must define function handler/],
    ['syntax error', 'function handler(w) {', /threw SyntaxError/],
  ];
  for (const [name, code, expected] of cases) {
    const outcome = await run(sandbox, name, code);
    assert.ok('problem' in outcome, `${name}: refused`);
    assert.match(outcome.problem, expected, name);
  }
  // The Function constructor reached through `this` builds functions of the sandbox, not of Node.
  const escaped = await run(
    sandbox,
    'escape',
    `function handler(w) {
      const F = this && this.constructor ? this.constructor.constructor : (() => {}).constructor;
      const g = F('return this')();
      w.payload = { process: typeof g.process, require: typeof g.require, Buffer: typeof g.Buffer, fetch: typeof g.fetch };
      return w;
    }`,
  );
  assert.ok('request' in escaped);
  assert.deepEqual(JSON.parse(escaped.request.body), {
    process: 'undefined',
    require: 'undefined',
    Buffer: 'undefined',
    fetch: 'undefined',
  });
  // A dynamic import finds no module loader: no module is ever loaded, the same endpoint's next run sees none.
  const importing =
    'function handler(w) { import("fs").then((m) => { globalThis.leak = m; }); w.payload = { leak: typeof globalThis.leak }; return w; }';
  for (let i = 0; i < 2; i++) {
    const imported = await run(sandbox, 'import', importing);
    assert.ok('request' in imported);
    assert.deepEqual(JSON.parse(imported.request.body), { leak: 'undefined' });
  }
  // Tampering with prototypes and globals changes only the tamperer's own sandbox.
  const tamper = await run(
    sandbox,
    'tamper',
    `function handler(w) {
      Object.prototype.injected = 'yes'; Array.prototype.push = null; globalThis.JSON = null;
      return w;
    }`,
  );
  assert.ok('request' in tamper, 'the wrapper keeps its own JSON');
  const clean = await run(
    sandbox,
    'other',
    'function handler(w) { w.payload = { seen: ({}).injected ?? null }; return w; }',
  );
  assert.ok('request' in clean);
  assert.deepEqual(JSON.parse(clean.request.body), { seen: null });
  assert.equal(({} as Record<string, unknown>).injected, undefined, "the host's prototypes are untouched");
  // After every case, the same spinning code's sandbox and a healthy one still answer.
  const healthy = await run(sandbox, 'endless loop', 'function handler(w) { w.headers["x-ok"] = "1"; return w; }');
  assert.ok('request' in healthy);
  assert.equal(healthy.request.headers['x-ok'], '1');
});

test('ten endpoints spinning at once on two threads each end at their deadline, and the next run is served', async (t) => {
  const sandbox = new Transformations({ ...LIMITS, transformationTimeoutMs: 20 });
  t.after(() => sandbox.close());
  // Ten spinning endpoints at once on two threads: each run ends at its deadline, one per endpoint at a time.
  const outcomes = await Promise.all(
    Array.from({ length: 10 }, (_, i) => run(sandbox, `spin-${i}`, 'function handler(w) { for (;;) {} }')),
  );
  for (const outcome of outcomes) assert.match('problem' in outcome ? outcome.problem : '', /deadline of 20 ms/);
});

test("one endpoint's many runs go in turns, in order, and a spinning endpoint's turn ends at its first deadline", async (t) => {
  const sandbox = new Transformations({ ...LIMITS, transformationTimeoutMs: 100 });
  t.after(() => sandbox.close());
  // A counter kept in the endpoint's runtime numbers its runs: 80 at once (more than one turn carries) run
  // once each, in the order they were asked for.
  const COUNTER = 'var made = 0; function handler(w) { made += 1; w.headers["x-run"] = String(made); return w; }';
  const counted = await Promise.all(Array.from({ length: 80 }, () => run(sandbox, 'counted', COUNTER)));
  assert.deepEqual(
    counted.map((outcome) => ('request' in outcome ? outcome.request.headers['x-run'] : outcome.problem)),
    Array.from({ length: 80 }, (_, i) => String(i + 1)),
  );

  // Twenty runs each of two spinning endpoints, then one of a quick one: each spinning run fails at its
  // deadline, and a turn stops at the first, so the quick run waits about one deadline, not twenty.
  const started = Date.now();
  const SPIN = 'function handler(w) { for (;;) {} }';
  const spinning = ['spinner', 'spinner-2'].flatMap((group) =>
    Array.from({ length: 20 }, () => run(sandbox, group, SPIN)),
  );
  const quick = await run(sandbox, 'quick', 'function handler(w) { return w; }');
  const quickMs = Date.now() - started;
  assert.ok('request' in quick);
  assert.ok(quickMs < 1_000, `the quick run waited ${quickMs} ms behind two spinning endpoints`);
  for (const outcome of await Promise.all(spinning))
    assert.match('problem' in outcome ? outcome.problem : '', /deadline of 100 ms/);
  // Twenty deadlines, one after another on one thread: the spinner's runs were each made, none skipped.
  assert.ok(Date.now() - started >= 20 * 100, 'every spinning run took its own deadline');
});

test("a run stuck in the engine's own code ends its thread soon after its deadline, and only that run fails", async (t) => {
  // One thread, so the stuck run shares its turn with other endpoints' runs.
  const sandbox = new Transformations({ ...LIMITS, transformationTimeoutMs: 100, transformationThreads: 1 });
  t.after(() => sandbox.close());
  const OK = 'function handler(w) { w.headers["x-ok"] = "1"; return w; }';
  // The thread's first turn: it warms the engine, and the runs below wait for the next one.
  const first = run(sandbox, 'first', OK);
  // Joining a billion holes runs inside QuickJS's C code, where no deadline is checked, and allocates nothing:
  // only ending the thread stops it.
  const STUCK = 'function handler(w) { new Array(1e9).join(""); return w; }';
  const started = Date.now();
  const [before, stuck, ...after] = await Promise.all([
    run(sandbox, 'before', OK),
    run(sandbox, 'stuck', STUCK),
    ...['after-1', 'after-2', 'after-3'].map((group) => run(sandbox, group, OK)),
  ]);
  assert.ok('request' in (await first));
  assert.match('problem' in stuck ? stuck.problem : '', /^deadline of 100 ms exceeded/);
  const stuckMs = Date.now() - started;
  // The other endpoints' runs in that turn are made again on the new thread, not failed with it.
  for (const outcome of [before, ...after]) {
    assert.ok('request' in outcome, JSON.stringify(outcome));
    assert.equal(outcome.request.headers['x-ok'], '1');
  }
  // Ended about a grace after its own deadline, not after the whole turn's bound (two deadlines and 2 s).
  assert.ok(stuckMs < 1_800, `the stuck run held its thread ${stuckMs} ms`);
  // The same code stuck at its top level (compiled when the endpoint is saved) is refused the same way.
  const problem = await sandbox.codeProblem('stuck-top', 'new Array(1e9).join(""); function handler(w) { return w; }');
  assert.match(problem ?? '', /^deadline of 100 ms exceeded/);
  const later = await run(sandbox, 'later', OK);
  assert.ok('request' in later, 'the new thread serves the next run');
});
