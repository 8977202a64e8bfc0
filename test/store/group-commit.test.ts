import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GroupCommit } from '../../src/store/group-commit.js';

test('requests submitted in one turn share one batch, in order', async () => {
  const batches: number[][] = [];
  const commit = new GroupCommit<number, number>(async (inputs) => {
    batches.push(inputs);
    return inputs.map((n) => n * 10);
  }, 1);
  const results = await Promise.all([1, 2, 3].map((n) => commit.submit(n)));
  assert.deepEqual(results, [10, 20, 30]);
  assert.deepEqual(batches, [[1, 2, 3]]);
});

test('one failing input fails alone; the others in its batch still succeed', async () => {
  const batches: number[][] = [];
  const commit = new GroupCommit<number, number>(async (inputs) => {
    batches.push(inputs);
    if (inputs.includes(2)) throw new Error('bad input 2');
    return inputs.map((n) => n + 1);
  }, 1);
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
  const commit = new GroupCommit<number, number>(async (inputs) => {
    batches.push(inputs);
    if (batches.length === 1) await gate;
    return inputs;
  }, 1);
  const first = commit.submit(1);
  await new Promise((r) => setImmediate(r));
  const later = [2, 3, 4].map((n) => commit.submit(n));
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(batches, [[1]], 'no second batch while the first is being written');
  release();
  await Promise.all([first, ...later]);
  assert.deepEqual(batches, [[1], [2, 3, 4]]);
});
