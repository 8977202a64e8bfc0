import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { ReceiverProcess } from '../../../bench/lib/receiver.js';
import { cleanup } from '../../../bench/lib/procs.js';

// The bench's receiver process (bench/receiver.ts) as the slow-neighbour scenario relies on it: it reads
// the emit time a body carries, counts arrivals under a path, and cuts off its slow answers when told to,
// until the next reset. Timings are the benchmark's; the bounds here only tell a cut from a 5 s answer.

const post = (url: string, body: string, id: string) =>
  request(url, { method: 'POST', headers: { 'webhook-id': id, 'content-type': 'application/json' }, body }).then(
    async (response) => (await response.body.dump(), response.statusCode),
  );

test('the receiver records emitted_at, counts by path and cuts its slow answers off until a reset', {
  timeout: 30_000,
}, async (t) => {
  const receiver = await ReceiverProcess.start(mkdtempSync(join(tmpdir(), 'herald-receiver-test-')));
  t.after(cleanup);

  assert.equal(await post(`${receiver.url}/neighbour/1`, '{"data":{"n":1,"emitted_at":1700000000123.25}}', 'a'), 200);
  assert.equal(await post(`${receiver.url}/other/1`, '{"data":{"n":2}}', 'b'), 200);
  const arrivals = await receiver.arrivals();
  assert.deepEqual(
    arrivals.map(([id, , path, emittedAt]) => [id, path, emittedAt ?? null]),
    [
      ['a', '/neighbour/1', 1700000000123.25],
      ['b', '/other/1', null],
    ],
  );
  assert.equal(await receiver.count('/neighbour/'), 1);
  assert.equal(await receiver.count(), 2);

  // A slow answer still waiting is cut off, and so is a slow request after the cut.
  const started = performance.now();
  const waiting = post(`${receiver.url}/slow/0`, '{}', 'slow-1').catch(() => 'cut');
  while ((await receiver.count('/slow/')) < 1) await new Promise((resolve) => setTimeout(resolve, 10));
  await receiver.cutSlow();
  assert.equal(await waiting, 'cut');
  assert.equal(await post(`${receiver.url}/slow/0`, '{}', 'slow-2').catch(() => 'cut'), 'cut');
  assert.ok(performance.now() - started < 4_000, 'both were cut, not answered after 5 s');
  assert.equal(await receiver.count('/slow/'), 2, 'a cut request still counts as arrived');

  // After a reset the slow endpoint answers late again (the request is left waiting here).
  await receiver.reset();
  let answered = false;
  void post(`${receiver.url}/slow/0`, '{}', 'slow-3').then(
    () => (answered = true),
    () => (answered = true),
  );
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal(answered, false, 'the slow answer waits again after a reset');
  assert.equal(await receiver.count('/slow/'), 1);
  await receiver.cutSlow();
});
