import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { pieces } from '../../../src/store/insert-rows.js';

// SQLite keeps a prepared statement per SQL text: multi-row inserts come in a few shapes. (Its bounded
// cache of statements: test/sqlite/store/statement-cache.test.ts.)

test('SQLite inserts rows in powers of two of at most 256, in order; PostgreSQL in chunks of 500', () => {
  const sizes = new Set<number>();
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 3_000 }), (n) => {
      const rows = Array.from({ length: n }, (_, i) => i);
      const sqlite = pieces('sqlite', rows);
      assert.deepEqual(sqlite.flat(), rows, 'every row once, in order');
      for (const piece of sqlite) {
        assert.ok(piece.length <= 256 && Number.isInteger(Math.log2(piece.length)), `a piece of ${piece.length}`);
        sizes.add(piece.length);
      }
      // Full pieces of 256, then one piece per bit of the rest.
      const rest = n % 256;
      assert.equal(sqlite.length, Math.floor(n / 256) + rest.toString(2).replaceAll('0', '').length);
      const postgres = pieces('postgres', rows);
      assert.deepEqual(postgres.flat(), rows);
      assert.equal(postgres.length, Math.ceil(n / 500));
    }),
    { numRuns: 300 },
  );
  assert.ok(sizes.size <= 9, `shapes seen: ${[...sizes].sort((a, b) => a - b).join(', ')}`);
});
