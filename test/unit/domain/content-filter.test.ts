import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import siftModule from 'sift';
import { FilterBudget, FilterBudgetExceeded, filterProblem, filterTester } from '../../../src/domain/content-filter.js';

// sift's UMD file: Node's CommonJS loader gives its tester factory as the default export.
const sift = siftModule as unknown as typeof import('sift')['default'];

// The metered evaluation means what sift means: the same verdict as sift's own tester for any filter and
// document, and a budget that stops an evaluation before its work, not after.

const scalar = fc.oneof(
  fc.constantFrom('a', 'b', 'c', ''),
  fc.integer({ min: -2, max: 2 }),
  fc.boolean(),
  fc.constant(null),
);
const value = fc.oneof(
  scalar,
  fc.array(scalar, { maxLength: 4 }),
  fc.array(fc.array(scalar, { maxLength: 2 }), { maxLength: 2 }),
);
const field = fc.constantFrom('data.x', 'data.y', 'data.x.0', 'data.o.k');
const condition = fc.oneof(
  value,
  fc.record({ $eq: value }),
  fc.record({ $ne: value }),
  fc.record({ $in: fc.array(value, { maxLength: 4 }) }),
  fc.record({ $nin: fc.array(value, { maxLength: 4 }) }),
  fc.record({ $all: fc.array(scalar, { minLength: 1, maxLength: 3 }) }),
  fc.record({ $gt: fc.integer({ min: -2, max: 2 }) }),
  fc.record({ $lte: fc.integer({ min: -2, max: 2 }) }),
  fc.record({ $exists: fc.boolean() }),
  fc.record({ $size: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ $regex: fc.constantFrom('^a', 'b$', 'c|a') }),
  fc.record({ $elemMatch: fc.record({ $in: fc.array(scalar, { maxLength: 3 }) }) }),
);
const clause = fc.dictionary(field, condition, { minKeys: 1, maxKeys: 2 });
const filter = fc.oneof(
  clause,
  fc.record({ $or: fc.array(clause, { minLength: 1, maxLength: 3 }) }),
  fc.record({ $nor: fc.array(clause, { minLength: 1, maxLength: 2 }) }),
);
const document = fc.record({
  type: fc.constant('invoice.paid'),
  data: fc.record({ x: value, y: value, o: fc.oneof(fc.record({ k: value }), value) }, { requiredKeys: [] }),
});

test("the metered filter gives sift's verdict for every filter and document", () => {
  fc.assert(
    fc.property(filter, document, (generated, generatedDoc) => {
      // As a filter and a body arrive: parsed JSON (fast-check's records have no prototype).
      const query = JSON.parse(JSON.stringify(generated)) as object;
      const doc = JSON.parse(JSON.stringify(generatedDoc)) as object;
      fc.pre(filterProblem(query) === null);
      const expected = sift(query as never)(doc);
      assert.equal(filterTester(JSON.stringify(query))(doc, new FilterBudget(1_000_000)), expected);
    }),
    { numRuns: 3_000 },
  );
});

test('an evaluation stops when its budget is spent, and every later one on that budget is refused', () => {
  const tester = filterTester(JSON.stringify({ 'data.tags': { $in: ['x'] } }));
  const doc = { data: { tags: Array.from({ length: 1_000 }, (_, i) => `t${i}`) } };
  assert.equal(tester(doc, new FilterBudget(5_000)), false);
  const small = new FilterBudget(500);
  assert.throws(() => tester(doc, small), FilterBudgetExceeded);
  assert.equal(small.exhausted, true);
  assert.throws(() => tester({ data: { tags: ['x'] } }, small), /budget of 500 steps/);
  // A pattern's characters are charged before it reads them.
  const pattern = filterTester(JSON.stringify({ 'data.s': { $regex: 'z$' } }));
  assert.throws(() => pattern({ data: { s: 'a'.repeat(10_000) } }, new FilterBudget(9_999)), FilterBudgetExceeded);
  assert.equal(pattern({ data: { s: 'a'.repeat(10_000) } }, new FilterBudget(10_100)), false);
});
