import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Outcomes, RECORD_TRIES } from '../../src/delivery/outcomes.js';
import type { AttemptInput, AttemptResult, WorkerQueue } from '../../src/store/queue.js';

// Recording an outcome: a store that refuses the receiver's answer still gets the attempt recorded, without
// the answer, on the last try; a store that refuses everything leaves the attempt to its lease.

const input = { task: { id: 'task_1', delivery_id: 'dlv_1' } } as unknown as AttemptInput;
const result: AttemptResult = {
  ok: false,
  responseStatus: 500,
  responseBody: 'an answer the database refuses',
  error: 'HTTP 500',
  durationMs: 3,
  retryAfterMs: null,
  at: Date.now(),
};

/** A queue whose completeMany refuses outcomes `refuses` says no to, recording what it accepted. */
function queueRefusing(refuses: (r: AttemptResult) => boolean) {
  const written: AttemptResult[] = [];
  let calls = 0;
  const queue = {
    async completeMany(items: { input: AttemptInput; result: AttemptResult }[]) {
      calls++;
      if (items.some(({ result }) => refuses(result))) throw new Error('refused by the database');
      written.push(...items.map(({ result }) => result));
      return items.map(() => true);
    },
  } as unknown as WorkerQueue;
  return { queue, written, calls: () => calls };
}

test('an outcome whose answer the store refuses is recorded without it on the last try', async () => {
  const { queue, written, calls } = queueRefusing((r) => r.responseBody !== null);
  const owned = await new Outcomes(queue, 'wrk_test', 'sqlite').record(input, result);
  assert.equal(owned, true);
  assert.equal(calls(), RECORD_TRIES);
  assert.deepEqual(written, [
    { ...result, responseBody: null, error: "HTTP 500; the receiver's answer could not be stored" },
  ]);
});

test('an outcome the store refuses whatever it holds is left to its lease, with the error', async () => {
  const { queue, written, calls } = queueRefusing(() => true);
  const owned = await new Outcomes(queue, 'wrk_test', 'sqlite').record(input, result);
  assert.ok(owned instanceof Error);
  assert.equal(calls(), RECORD_TRIES);
  assert.deepEqual(written, []);
});
