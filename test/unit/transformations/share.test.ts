import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Transformations } from '../../../src/transformations/index.js';
import { startingWebhook } from '../../../src/domain/transformations.js';
import { watchSandboxCalls } from '../../support/sandbox-calls.js';

// One process's API and worker share a transformation pool (src/service.ts): each holder closes its share,
// and the threads stop only when the last holder lets go, so an API that stops first does not fail the
// runs of a worker still finishing its attempts.

const LIMITS = {
  transformationTimeoutMs: 1_000,
  transformationMemoryBytes: 8 * 1024 * 1024,
  transformationThreads: 1,
  maxPayloadBytes: 64 * 1024,
};
const CODE = 'function handler(w) { w.headers["x-ran"] = "yes"; return w; }';

async function ran(pool: Transformations) {
  const webhook = startingWebhook('https://receiver.example/hook', 'invoice.paid', '{"type":"invoice.paid"}');
  return pool.apply('ep_1', '1', CODE, webhook, () => null);
}

test('a shared pool serves its holders until the last of them closes it', async (t) => {
  const seen = watchSandboxCalls(t);
  const pool = new Transformations(LIMITS);
  const api = pool.share();
  const worker = pool.share();
  await api.close();
  // A second close of one share lets go of nothing more.
  await api.close();
  const afterOne = await ran(worker);
  assert.ok('request' in afterOne, JSON.stringify(afterOne));
  assert.equal(afterOne.request.headers['x-ran'], 'yes');
  await worker.close();
  assert.ok('request' in (await ran(pool)), 'the creator still holds it');
  await pool.close();
  assert.deepEqual(await ran(pool), { problem: 'failed: the service is stopping' });
  assert.equal(seen.threads.size, 1, "every share's runs went to the one pool's one thread");
  assert.equal(seen.withCode + seen.without, 2, 'the run after the last close was not posted');
});
