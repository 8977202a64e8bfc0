import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DAY_MS,
  expired,
  HOUR_MS,
  idBounds,
  legacyEnd,
  PARTITIONED,
  partitionName,
  rangeOfBound,
  rangesToMake,
} from '../../../src/domain/partitions.js';

// The partitions' rules (src/domain/partitions.ts): which ranges are made ahead, their names and id
// bounds, and which are past retention.

const at = (iso: string) => Date.parse(iso);

test('ranges follow the last one to whole intervals, ahead of the current one, one partition for a gap', () => {
  const now = at('2026-12-03T17:20:00Z');
  // The old table ends at the next hour: a short range to midnight, then days through three ahead.
  assert.deepEqual(rangesToMake(legacyEnd(now), now, DAY_MS, 3), [
    { from: at('2026-12-03T18:00:00Z'), to: at('2026-12-04T00:00:00Z') },
    { from: at('2026-12-04T00:00:00Z'), to: at('2026-12-05T00:00:00Z') },
    { from: at('2026-12-05T00:00:00Z'), to: at('2026-12-06T00:00:00Z') },
    { from: at('2026-12-06T00:00:00Z'), to: at('2026-12-07T00:00:00Z') },
  ]);
  // Made already: nothing more.
  assert.deepEqual(rangesToMake(at('2026-12-07T00:00:00Z'), now, DAY_MS, 3), []);
  // After a month without a worker: the gap up to today is one range, then today and the days ahead.
  const later = at('2027-01-10T05:00:00Z');
  const ranges = rangesToMake(at('2026-12-07T00:00:00Z'), later, DAY_MS, 1);
  assert.deepEqual(ranges, [
    { from: at('2026-12-07T00:00:00Z'), to: at('2027-01-10T00:00:00Z') },
    { from: at('2027-01-10T00:00:00Z'), to: at('2027-01-11T00:00:00Z') },
    { from: at('2027-01-11T00:00:00Z'), to: at('2027-01-12T00:00:00Z') },
  ]);
  // Hours.
  assert.equal(rangesToMake(legacyEnd(now), now, HOUR_MS, 2).length, 2);
});

test('a partition is named by its start, bounded by the ids of its times, and read back from its bound', () => {
  const from = at('2026-12-03T00:00:00Z');
  const deliveries = PARTITIONED.find((t) => t.table === 'deliveries')!;
  assert.equal(partitionName('deliveries', from), 'deliveries_p20261203t0000');
  assert.equal(partitionName('attempts', at('2026-12-03T18:00:00Z')), 'attempts_p20261203t1800');
  const bounds = idBounds(deliveries, { from, to: from + DAY_MS });
  assert.match(bounds.from!, /^dlv_[0-9a-z]{10}$/);
  assert.ok(bounds.from! < bounds.to);
  assert.deepEqual(rangeOfBound(`FOR VALUES FROM ('${bounds.from}') TO ('${bounds.to}')`), { from, to: from + DAY_MS });
  assert.deepEqual(rangeOfBound(`FOR VALUES FROM (MINVALUE) TO ('${bounds.to}')`), { from: null, to: from + DAY_MS });
  assert.equal(rangeOfBound('DEFAULT'), null);
  assert.throws(() => rangeOfBound("FOR VALUES IN ('x')"));
});

test('a range is past retention once its end is', () => {
  const range = { from: at('2026-11-01T00:00:00Z'), to: at('2026-11-02T00:00:00Z') };
  assert.equal(expired(range, at('2026-12-02T00:00:00Z'), 30 * DAY_MS), true);
  assert.equal(expired(range, at('2026-12-01T23:59:59Z'), 30 * DAY_MS), false);
  assert.equal(expired({ from: null, to: range.to }, at('2026-12-02T00:00:00Z'), 30 * DAY_MS), true);
});
