import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Lane } from '../../../src/delivery/lanes.js';
import { grantStarts, intervalUs } from '../../../src/domain/rate.js';

// A rate-limited lane makes the starts the store granted: a worker whose event loop stalls past several
// granted times (a busy machine) still makes them an interval apart, so no sliding second of one worker's
// starts holds more than the limit.

/** The most starts in any 1,000 ms. */
function densest(at: number[]): number {
  let most = 0;
  for (let i = 0, j = 0; i < at.length; i++) {
    while (at[j]! <= at[i]! - 1_000) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

test('a lane woken late by stalls never makes granted starts back to back', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 200 }),
      fc.array(fc.double({ min: 0, max: 3, noNaN: true }), { minLength: 5, maxLength: 200 }),
      (limit, stalls) => {
        const lane = new Lane('ep_1', 1_000, 1);
        lane.rateLimit = limit;
        const interval = intervalUs(limit) / 1000;
        let now = 1_700_000_000_000;
        let tatUs = 0;
        const made: number[] = [];
        for (const stall of stalls) {
          // The loop is held for up to three intervals, then dispatch runs.
          now += stall * interval;
          if (lane.starts.length === 0) {
            const grant = grantStarts(tatUs, now * 1000, limit, limit);
            tatUs = grant.tatUs;
            lane.starts = grant.startsUs.map((us) => us / 1000);
          }
          while (lane.canStart(now)) {
            lane.started(now);
            lane.inFlight--;
            made.push(now);
          }
        }
        for (let i = 1; i < made.length; i++)
          assert.ok(made[i]! - made[i - 1]! >= interval - 1e-6, `starts ${made[i]! - made[i - 1]!} ms apart`);
        assert.ok(densest(made) <= limit, `${densest(made)} starts in a second at limit ${limit}`);
      },
    ),
    { numRuns: 300 },
  );
});

test('after a stall the next start waits an interval, and the wake-up time says so', () => {
  const lane = new Lane('ep_1', 10, 1);
  lane.rateLimit = 5; // an interval of 200 ms
  lane.starts = [1_000, 1_200, 1_400];
  // Woken at 1,290: the start granted for 1,000 is made, the one for 1,200 waits until 1,490.
  assert.equal(lane.canStart(1_290), true);
  lane.started(1_290);
  assert.equal(lane.canStart(1_290), false);
  assert.equal(lane.nextStart, 1_490);
  assert.equal(lane.canStart(1_489), false);
  assert.equal(lane.canStart(1_490), true);
  lane.started(1_490);
  // 1,400 is due but the previous start was at 1,490.
  assert.equal(lane.nextStart, 1_690);
  // A time missed by more than an interval and a half is dropped: none is left for later.
  assert.equal(lane.canStart(2_000), false);
  assert.equal(lane.nextStart, null);
});
