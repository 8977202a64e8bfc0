import { test } from 'node:test';
import assert from 'node:assert/strict';
import { afterRefusal, Outcomes, RECORD_TRIES } from '../../../src/delivery/outcomes.js';
import type { AttemptInput, AttemptResult, WorkerQueue } from '../../../src/store/queue/index.js';

// Recording outcomes when the store refuses: what it tries again (the database was away or busy), what it
// records without the receiver's answer (a value refused), and what it leaves to the attempt's lease;
// each fallback logged once with its cause. The store's side is a stand-in for the queue's port that
// throws errors shaped as the drivers' (store/errors.test.ts classifies errors the real databases raise).

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const input = {
  task: { id: 'task_1', delivery_id: 'dlv_1' },
  delivery: { id: 'dlv_1', messageId: 'evt_1', traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01`, tracestate: null },
} as unknown as AttemptInput;
const result: AttemptResult = {
  ok: false,
  responseStatus: 500,
  responseBody: 'an answer the database refuses',
  requestHeaders: 'webhook-id: msg_1\n',
  responseHeaders: 'x-answer: refused too\n',
  error: 'HTTP 500',
  durationMs: 3,
  retryAfterMs: null,
  at: Date.now(),
};

const storeError = (code: string) => Object.assign(new Error(`store error ${code}`), { code });

/** A queue whose completeMany throws what `refuse` returns for a call (null: records it). */
function queueRefusing(refuse: (items: { result: AttemptResult }[], call: number) => Error | null) {
  const written: AttemptResult[] = [];
  const batches: number[] = [];
  const queue = {
    async completeMany(items: { input: AttemptInput; result: AttemptResult }[]) {
      batches.push(items.length);
      const error = refuse(items, batches.length);
      if (error) throw error;
      written.push(...items.map(({ result }) => result));
      return items.map(() => true);
    },
  } as unknown as WorkerQueue;
  return { queue, written, batches };
}

function logged() {
  const lines: { fields: Record<string, unknown>; message: string }[] = [];
  return {
    lines,
    log: { warn: (fields: Record<string, unknown>, message: string) => void lines.push({ fields, message }) },
  };
}

test('what follows a refusal: again when away, busy or full, without the answer for a refused value, else the lease', () => {
  assert.equal(afterRefusal(storeError('57P01'), true), 'again');
  assert.equal(afterRefusal(storeError('40P01'), true), 'again');
  assert.equal(afterRefusal(storeError('SQLITE_BUSY'), false), 'again');
  assert.equal(afterRefusal(storeError('SQLITE_FULL'), true), 'again');
  assert.equal(afterRefusal(storeError('22021'), true), 'without-answer');
  assert.equal(afterRefusal(storeError('22021'), false), 'give-up');
  assert.equal(afterRefusal(storeError('23505'), true), 'give-up');
  assert.equal(afterRefusal(new Error('a bug'), true), 'give-up');
});

test('an outcome whose answer the store refuses is recorded without it at once, and logged once', async () => {
  const { queue, written, batches } = queueRefusing((items) =>
    items.some(({ result }) => result.responseBody !== null || result.responseHeaders != null)
      ? storeError('22021')
      : null,
  );
  const { lines, log } = logged();
  const owned = await new Outcomes(queue, 'wrk_test', 'sqlite', log as never).record(input, result);
  assert.equal(owned, true);
  assert.equal(batches.length, 2);
  assert.deepEqual(written, [
    {
      ...result,
      responseBody: null,
      requestHeaders: null,
      responseHeaders: null,
      error: "HTTP 500; the receiver's answer could not be stored",
    },
  ]);
  assert.equal(lines.length, 1);
  assert.deepEqual(lines[0]!.fields.cause, { kind: 'data', code: '22021' });
  assert.equal(lines[0]!.fields.trace_id, TRACE_ID, "the line names the message's trace");
});

test('a store that stays away is tried RECORD_TRIES times, then the attempt is left to its lease', async () => {
  const { queue, written, batches } = queueRefusing(() => storeError('57P01'));
  const owned = await new Outcomes(queue, 'wrk_test', 'sqlite', logged().log as never).record(input, result);
  assert.ok(owned instanceof Error);
  assert.equal(batches.length, RECORD_TRIES);
  assert.deepEqual(written, []);
});

test('an error that is neither is not tried again', async () => {
  const { queue, batches } = queueRefusing(() => new Error('a bug'));
  const owned = await new Outcomes(queue, 'wrk_test', 'sqlite', logged().log as never).record(input, result);
  assert.ok(owned instanceof Error);
  assert.equal(batches.length, 1);
});

test('a batch is tried again whole when the store was busy, and split when it refused something; logged once each', async () => {
  const many = Array.from({ length: 3 }, (_, i) => ({
    input: { task: { id: `task_${i}`, delivery_id: `dlv_${i}` } } as unknown as AttemptInput,
    result: { ...result, responseBody: null },
  }));
  {
    const { queue, written, batches } = queueRefusing((_items, call) => (call === 1 ? storeError('40P01') : null));
    const { lines, log } = logged();
    const outcomes = new Outcomes(queue, 'wrk_test', 'sqlite', log as never);
    const owned = await Promise.all(many.map(({ input, result }) => outcomes.record(input, result)));
    assert.deepEqual(owned, [true, true, true]);
    assert.equal(written.length, 3);
    assert.ok(batches.every((n) => n >= 1));
    assert.ok(lines.every((line) => /trying the batch again/.test(line.message)));
  }
  {
    const { queue, written, batches } = queueRefusing((items) => (items.length > 1 ? storeError('23505') : null));
    const { lines, log } = logged();
    const outcomes = new Outcomes(queue, 'wrk_test', 'sqlite', log as never);
    const owned = await Promise.all(many.map(({ input, result }) => outcomes.record(input, result)));
    assert.deepEqual(owned, [true, true, true]);
    assert.equal(written.length, 3);
    const split = lines.filter((line) => /recording each outcome on its own/.test(line.message));
    assert.equal(split.length, batches.filter((n) => n > 1).length, 'one line per batch split');
    for (const line of split) assert.deepEqual(line.fields.cause, { kind: 'constraint', code: '23505' });
  }
});
