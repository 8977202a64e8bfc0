import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { storeErrorKind } from '../../../src/store/errors.js';

// Store errors are classified from what the real database raises: an error made by SQLite here, not a
// code written by hand, is what each case checks. (PostgreSQL's: test/postgres/store/errors.test.ts.)

const refusal = (run: () => unknown): unknown => {
  try {
    run();
  } catch (error) {
    return error;
  }
  assert.fail('expected the database to refuse');
};

test('SQLite: busy, constraint and data errors', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'herald-errors-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'db.sqlite');
  const a = new Database(file);
  const b = new Database(file, { timeout: 0 });
  t.after(() => {
    a.close();
    b.close();
  });
  a.exec('create table t (id integer primary key, name text unique)');
  a.exec("insert into t values (1, 'one')");
  assert.equal(storeErrorKind(refusal(() => a.exec("insert into t values (1, 'again')"))), 'constraint');
  assert.equal(storeErrorKind(refusal(() => a.exec("insert into t values ('not a number', 'x')"))), 'data');
  a.exec('begin immediate');
  assert.equal(storeErrorKind(refusal(() => b.exec('begin immediate'))), 'unavailable');
  a.exec('rollback');
  assert.equal(storeErrorKind(refusal(() => a.exec('select * from no_such_table'))), 'other');
});
