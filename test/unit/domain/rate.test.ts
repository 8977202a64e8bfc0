import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { GRANT_AHEAD_US, grantStarts, intervalUs } from '../../../src/domain/rate.js';

// The rate rule: whatever the requests (how many, when, from how many workers sharing the stored time),
// no 1,000 ms window holds more than `limit` granted starts.

test('no sliding second holds more than the limit, whatever the grants asked for', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 10_000 }),
      fc.array(fc.record({ afterUs: fc.integer({ min: 0, max: 700_000 }), want: fc.integer({ min: 1, max: 50 }) }), {
        minLength: 1,
        maxLength: 60,
      }),
      (limit, requests) => {
        let tat = 0;
        let now = 1_700_000_000_000_000;
        const starts: number[] = [];
        for (const { afterUs, want } of requests) {
          now += afterUs;
          const grant = grantStarts(tat, now, limit, want);
          assert.ok(grant.startsUs.length <= want);
          for (const start of grant.startsUs) assert.ok(start >= now && start <= now + GRANT_AHEAD_US);
          starts.push(...grant.startsUs);
          tat = grant.tatUs;
        }
        for (let i = 0, j = 0; i < starts.length; i++) {
          while (starts[j]! <= starts[i]! - 1_000_000) j++;
          assert.ok(i - j + 1 <= limit, `${i - j + 1} starts in a second at limit ${limit}`);
        }
      },
    ),
    { numRuns: 500 },
  );
});

test('an idle endpoint starts at once; a busy one gets the next free times; the limit is reached', () => {
  const now = 1_700_000_000_000_000;
  assert.deepEqual(grantStarts(0, now, 5, 1).startsUs, [now]);
  const many = grantStarts(0, now, 5, 100);
  assert.deepEqual(
    many.startsUs,
    [0, 1, 2, 3, 4, 5].map((i) => now + i * intervalUs(5)),
    'a second ahead, inclusive',
  );
  assert.deepEqual(grantStarts(many.tatUs, now + 10, 5, 1).startsUs, [], 'the next free time is past a second ahead');
  const next = grantStarts(many.tatUs, now + 300_000, 5, 1);
  assert.deepEqual(next.startsUs, [now + 6 * intervalUs(5)]);
  assert.equal(grantStarts(now + 2 * GRANT_AHEAD_US, now, 5, 3).startsUs.length, 0, 'nothing beyond a second ahead');
  assert.equal(intervalUs(3), 333_334, 'rounded up, so three starts never fit in a second');
});
