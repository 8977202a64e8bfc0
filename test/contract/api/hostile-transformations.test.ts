import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, type Client } from '../../support/client.js';
import { loopProbe } from '../../support/loop-probe.js';

// One tenant's transformation cannot stall the process every tenant shares: code that spins, grows without
// end or recurses runs in the sandbox's threads, so the API's event loop keeps answering while simulate
// runs it, alone or many at once, and each run ends at its deadline or memory cap with a 400 saying which.

/** The longest the event loop may be held while hostile code runs; the margin is for the suite beside it. */
const MAX_LOOP_DELAY_MS = 200;

const HOSTILE: [string, string, RegExp][] = [
  ['a loop that never ends', 'function handler(w) { while (true) {} }', /deadline of 50 ms exceeded/],
  [
    'memory grown without end',
    "function handler(w) { var a = []; for (;;) a.push('x'.repeat(65536) + a.length); }",
    /memory|deadline/,
  ],
  ['recursion without end', 'function handler(w) { return handler(w); }', /transformation failed/],
  // Inside the engine's C code no deadline is checked: the thread is ended instead (pool.ts, RunProgress).
  [
    'a built-in that never checks its deadline',
    'function handler(w) { new Array(1e9).join(""); return w; }',
    /deadline of 50 ms exceeded \(the run was stopped\)/,
  ],
];

describe('hostile transformations', () => {
  let service: TestService;
  let api: Client;
  let endpointId: string;
  const { staysResponsive } = loopProbe(() => service.url, MAX_LOOP_DELAY_MS);

  before(async () => {
    service = await startTestService({ HERALD_ROLE: 'api' });
    ({ test: api } = await bootstrap(service.url));
    const app = await api.post('/api/v1/applications', { name: 'Hostile' });
    const endpoint = await api.post('/api/v1/endpoints', { app_id: app.body.id, url: 'http://127.0.0.1:9/t' });
    endpointId = endpoint.body.id;
  });
  after(async () => service?.stop());

  const simulate = (code: string) =>
    api.post(`/api/v1/endpoints/${endpointId}/transformation/simulate`, { code, payload: { n: 1 } });

  for (const [what, code, error] of HOSTILE) {
    test(`${what}: simulate answers 400 and the event loop stays free`, async () => {
      await staysResponsive(what, async () => {
        const answer = await simulate(code);
        assert.equal(answer.status, 400, JSON.stringify(answer.body));
        assert.match(answer.body.error.message, error);
      });
    });
  }

  test('eight spinning simulations at once: each ends at its deadline, the loop stays free', async () => {
    await staysResponsive('eight spinning simulations', async () => {
      const answers = await Promise.all(Array.from({ length: 8 }, () => simulate(HOSTILE[0]![1])));
      for (const answer of answers) {
        assert.equal(answer.status, 400);
        assert.match(answer.body.error.message, /deadline of 50 ms exceeded/);
      }
    });
    // And the sandbox still answers ordinary code afterwards.
    const fine = await simulate('function handler(w) { w.payload = { ok: true }; return w; }');
    assert.equal(fine.status, 200, JSON.stringify(fine.body));
    assert.deepEqual(fine.body.payload, { ok: true });
  });
});
