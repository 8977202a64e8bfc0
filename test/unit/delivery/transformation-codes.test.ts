import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TransformationCodes } from '../../../src/delivery/transformation-codes.js';

// The worker's endpoints' transformation code (src/delivery/transformation-codes.ts): read once per endpoint
// version while kept, the least recently used dropped first within a bound on what the kept code weighs, a
// failed read not kept.

/** A store of code by endpoint that counts its reads; `failing` endpoints' next read fails. */
function store(codes: Record<string, string | null>) {
  const reads: string[] = [];
  const failing = new Set<string>();
  return {
    reads,
    failing,
    load: async (endpointId: string) => {
      reads.push(endpointId);
      if (failing.delete(endpointId)) throw new Error('store away');
      return codes[endpointId] ?? null;
    },
  };
}

test("an endpoint's code is read once per version, and a failed read is read again", async () => {
  const s = store({ ep_a: 'function handler(w) { return w; }', ep_b: null });
  const codes = new TransformationCodes(s.load);
  assert.equal(await codes.get('ep_a', 1), 'function handler(w) { return w; }');
  assert.equal(await codes.get('ep_a', 1), 'function handler(w) { return w; }');
  assert.equal(await codes.get('ep_b', 1), null);
  assert.equal(await codes.get('ep_b', 1), null);
  assert.deepEqual(s.reads, ['ep_a', 'ep_b']);
  // A new version is read again, in place of the old one.
  await codes.get('ep_a', 2);
  assert.deepEqual(s.reads, ['ep_a', 'ep_b', 'ep_a']);
  assert.equal(codes.size, 2);
  s.failing.add('ep_c');
  await assert.rejects(codes.get('ep_c', 1), /store away/);
  assert.equal(await codes.get('ep_c', 1), null);
  assert.deepEqual(s.reads.slice(3), ['ep_c', 'ep_c']);
});

test('past its bound the least recently used go first; many endpoints do not clear the rest', async () => {
  const code = (n: number) => `function handler(w) { return w; } // ${'x'.repeat(1_000)} ${n}`;
  const all: Record<string, string> = {};
  for (let n = 0; n < 10; n++) all[`ep_${n}`] = code(n);
  const s = store(all);
  // Room for about four entries of ~1,300 weight each.
  const codes = new TransformationCodes(s.load, 5_500);
  for (let n = 0; n < 4; n++) await codes.get(`ep_${n}`, 1);
  assert.equal(codes.size, 4);
  // ep_0 is used again, so ep_1 is now the least recently used and goes when ep_4 comes.
  await codes.get('ep_0', 1);
  await codes.get('ep_4', 1);
  assert.equal(codes.size, 4);
  s.reads.length = 0;
  for (const id of ['ep_0', 'ep_2', 'ep_3', 'ep_4']) await codes.get(id, 1);
  assert.deepEqual(s.reads, [], 'the four most recently used are kept');
  await codes.get('ep_1', 1);
  assert.deepEqual(s.reads, ['ep_1'], 'the least recently used was dropped');
  // However many endpoints pass through, what is kept stays within the bound.
  for (let n = 0; n < 10; n++) await codes.get(`ep_${n}`, 2);
  assert.ok(codes.size <= 4, `${codes.size} kept`);
});
