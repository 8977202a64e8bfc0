import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GroupCommit } from '../../../src/store/group-commit.js';

test('requests submitted in one turn share one batch, in order', async () => {
  const batches: number[][] = [];
  const commit = new GroupCommit<number, number>(
    async (inputs) => {
      batches.push(inputs);
      return inputs.map((n) => n * 10);
    },
    { maxParallel: 1 },
  );
  const results = await Promise.all([1, 2, 3].map((n) => commit.submit(n)));
  assert.deepEqual(results, [10, 20, 30]);
  assert.deepEqual(batches, [[1, 2, 3]]);
});

test('one failing input fails alone; the others in its batch still succeed', async () => {
  const batches: number[][] = [];
  const commit = new GroupCommit<number, number>(
    async (inputs) => {
      batches.push(inputs);
      if (inputs.includes(2)) throw new Error('bad input 2');
      return inputs.map((n) => n + 1);
    },
    { maxParallel: 1 },
  );
  const settled = await Promise.allSettled([1, 2, 3].map((n) => commit.submit(n)));
  assert.deepEqual(settled[0], { status: 'fulfilled', value: 2 });
  assert.equal(settled[1]!.status, 'rejected');
  assert.match(String((settled[1] as PromiseRejectedResult).reason), /bad input 2/);
  assert.deepEqual(settled[2], { status: 'fulfilled', value: 4 });
  assert.deepEqual(batches, [[1, 2, 3], [1], [2], [3]]);
});

test('batches wait for the one in flight when parallelism is 1 (group commit)', async () => {
  const batches: number[][] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const commit = new GroupCommit<number, number>(
    async (inputs) => {
      batches.push(inputs);
      if (batches.length === 1) await gate;
      return inputs;
    },
    { maxParallel: 1 },
  );
  const first = commit.submit(1);
  await new Promise((r) => setImmediate(r));
  const later = [2, 3, 4].map((n) => commit.submit(n));
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(batches, [[1]], 'no second batch while the first is being written');
  release();
  await Promise.all([first, ...later]);
  assert.deepEqual(batches, [[1], [2, 3, 4]]);
});

test('with a minimum spacing, requests arriving soon after a commit wait and share the next batch', async () => {
  const batches: number[][] = [];
  const commit = new GroupCommit<number, number>(async (inputs) => (batches.push(inputs), inputs), {
    maxParallel: 1,
    minSpacingMs: 60,
  });
  // A batch of two: requests are arriving faster than one at a time, so the spacing applies.
  await Promise.all([commit.submit(0), commit.submit(0)]);
  // Three requests in three separate event-loop turns, all within the spacing after the first commit.
  const later: Promise<number>[] = [];
  for (const n of [1, 2, 3]) {
    later.push(commit.submit(n));
    await new Promise((r) => setTimeout(r, 5));
  }
  await Promise.all(later);
  assert.deepEqual(batches, [
    [0, 0],
    [1, 2, 3],
  ]);
});

test('a client sending one request at a time is not held back by the spacing', async () => {
  const batches: number[][] = [];
  const commit = new GroupCommit<number, number>(async (inputs) => (batches.push(inputs), inputs), {
    maxParallel: 1,
    minSpacingMs: 5_000,
  });
  const started = performance.now();
  for (const n of [1, 2, 3, 4]) await commit.submit(n);
  // Each batch held one request, so none waited 5 s after the previous commit.
  assert.ok(performance.now() - started < 2_000, 'sequential requests waited for the spacing');
  assert.deepEqual(batches, [[1], [2], [3], [4]]);
});

test('a batch holds requests up to a total size; a request larger than that goes alone', async () => {
  const batches: number[][] = [];
  const commit = new GroupCommit<number, number>(async (inputs) => (batches.push(inputs), inputs), {
    maxParallel: 1,
    sizeOf: (n) => n,
    maxBatchSize: 10,
  });
  await Promise.all([4, 5, 3, 12, 1, 2].map((n) => commit.submit(n)));
  assert.deepEqual(batches, [[4, 5], [3], [12], [1, 2]]);
});
