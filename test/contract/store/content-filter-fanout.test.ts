import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import siftModule from 'sift';
import { filterProblem } from '../../../src/domain/content-filter.js';
import { outboundEnvelope } from '../../../src/domain/envelope.js';
import { openStore } from '../../support/store.js';

/** sift's own tester, all its operators (its UMD file's exports are members of the default export). */
const sift = (siftModule as unknown as typeof import('sift')).default;

// The fan-out's choice is the library's verdict: for random filters and payloads, an emit makes a delivery
// for a filtered endpoint exactly when sift, with its own operators, says the outbound body matches.

const value = fc.oneof(
  fc.integer({ min: -3, max: 3 }),
  fc.constantFrom('a', 'b', 'ab'),
  fc.boolean(),
  fc.constant(null),
);
const field = fc.constantFrom('data.n', 'data.s', 'data.list', 'data.nested.x', 'type');
const condition: fc.Arbitrary<object> = fc.oneof(
  fc.record({ f: field, v: value }).map(({ f, v }) => ({ [f]: v })),
  fc
    .record({ f: field, op: fc.constantFrom('$eq', '$ne', '$gt', '$gte', '$lt', '$lte'), v: value })
    .map(({ f, op, v }) => ({ [f]: { [op]: v } })),
  fc.record({ f: field, vs: fc.array(value, { maxLength: 3 }) }).map(({ f, vs }) => ({ [f]: { $in: vs } })),
  fc.record({ f: field, vs: fc.array(value, { maxLength: 3 }) }).map(({ f, vs }) => ({ [f]: { $nin: vs } })),
  fc.record({ f: field, e: fc.boolean() }).map(({ f, e }) => ({ [f]: { $exists: e } })),
  fc.record({ f: field, v: value }).map(({ f, v }) => ({ [f]: { $not: { $eq: v } } })),
);
const filter = fc.oneof(
  condition,
  fc.array(condition, { minLength: 1, maxLength: 3 }).map((all) => ({ $and: all })),
  fc.array(condition, { minLength: 1, maxLength: 3 }).map((any) => ({ $or: any })),
);
const payload = fc.record(
  { n: value, s: value, list: fc.array(value, { maxLength: 3 }), nested: fc.record({ x: value }) },
  { requiredKeys: [] },
);

test('an emit makes a delivery for a filtered endpoint exactly when the library says the body matches', {
  timeout: 120_000,
}, async (t) => {
  const { store, scope, appId, endpointId } = await openStore(t);
  let matched = 0;
  await fc.assert(
    fc.asyncProperty(filter, payload, async (f, p) => {
      assert.equal(filterProblem(f), null, JSON.stringify(f));
      await store.endpoints.update(scope, endpointId, { filter: f });
      const payloadJson = JSON.stringify(p);
      const emitted = await store.messages.emit({
        scope,
        appId,
        eventType: 'invoice.paid',
        payloadJson,
        idempotencyKey: null,
      });
      assert.ok(emitted.ok);
      const envelope = outboundEnvelope('invoice.paid', emitted.message.created_at, payloadJson);
      const expected = sift(f as never)(envelope);
      if (expected) matched++;
      assert.equal(emitted.deliveryIds.length, expected ? 1 : 0, `${JSON.stringify(f)} on ${JSON.stringify(p)}`);
    }),
    { numRuns: 80 },
  );
  assert.ok(matched > 0 && matched < 80, `both verdicts were seen (${matched} of 80 matched)`);
});
