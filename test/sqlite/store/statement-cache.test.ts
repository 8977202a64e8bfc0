import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectSqlite } from '../../../src/store/db.js';

// SQLite keeps a prepared statement per SQL text, and the connection's cache of statements is bounded,
// keeping the ones in use. (The few shapes of multi-row inserts: test/contract/store/statement-shapes.test.ts.)

test('the SQLite statement cache keeps what is used and drops the least recently used past 500', (t) => {
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
