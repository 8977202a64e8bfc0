import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { pieces } from '../../src/store/insert-rows.js';
import { connectSqlite } from '../../src/store/db.js';
import { TEST_STORE } from '../support/service.js';

// SQLite keeps a prepared statement per SQL text: multi-row inserts come in a few shapes, and the
// connection's cache of statements is bounded, keeping the ones in use.

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

test('the SQLite statement cache keeps what is used and drops the least recently used past 500', {
  skip: TEST_STORE !== 'sqlite' && 'the statement cache is the SQLite connection’s',
}, (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'herald-statements-'));
  const { database } = connectSqlite(join(dir, 'cache.db'));
  t.after(() => {
    database.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const kept = database.prepare('select 1 as kept');
  const dropped = database.prepare('select 2 as dropped');
  assert.equal(database.prepare('select 1 as kept'), kept, 'the same text finds the prepared statement');
  for (let i = 0; i < 600; i++) {
    database.prepare(`select ${i + 10} as other`);
    // Used all along: always among the most recent.
    if (i % 100 === 0) assert.equal(database.prepare('select 1 as kept'), kept);
  }
  assert.equal(database.prepare('select 1 as kept'), kept, 'a statement in use stays');
  const again = database.prepare('select 2 as dropped');
  assert.notEqual(again, dropped, 'one unused while 500 others were prepared is prepared anew');
  assert.deepEqual(again.get(), { dropped: 2 });
});
