import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { storeErrorKind } from '../../src/store/errors.js';
import { createTestDatabase, TEST_STORE } from '../support/service.js';

// Store errors are classified from what the real databases raise: an error made by SQLite or PostgreSQL
// here, not a code written by hand, is what each case checks.

const refusal = (run: () => unknown): unknown => {
  try {
    run();
  } catch (error) {
    return error;
  }
  assert.fail('expected the database to refuse');
};

test('SQLite: busy, constraint and data errors', (t) => {
  if (TEST_STORE !== 'sqlite') return t.skip('SQLite pass only');
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

test('PostgreSQL: data, constraint, connection and shutdown errors', async (t) => {
  if (TEST_STORE !== 'postgres') return t.skip('PostgreSQL pass only');
  const database = await createTestDatabase();
  const client = new pg.Client({ connectionString: database.env.HERALD_DATABASE_URL });
  await client.connect();
  t.after(async () => {
    await client.end().catch(() => {});
    await database.drop();
  });
  const refused = (text: string, values: unknown[] = []) =>
    client.query(text, values).then(
      () => assert.fail(text),
      (e) => e,
    );
  await client.query('create table t (id int primary key)');
  await client.query('insert into t values (1)');
  assert.equal(storeErrorKind(await refused('insert into t values (1)')), 'constraint');
  assert.equal(storeErrorKind(await refused('select $1::text', ['nul\u0000'])), 'data');
  assert.equal(storeErrorKind(await refused("select 'x'::int")), 'data');
  assert.equal(storeErrorKind(await refused('select * from no_such_table')), 'other');
  const away = new pg.Client({ host: '127.0.0.1', port: 9, user: 'postgres', connectionTimeoutMillis: 2_000 });
  assert.equal(
    storeErrorKind(
      await away.connect().then(
        () => assert.fail('connected'),
        (e) => e,
      ),
    ),
    'unavailable',
  );
  // The session is ended by the server: what the next query meets is "the server went away".
  const other = new pg.Client({ connectionString: database.env.HERALD_DATABASE_URL });
  await other.connect();
  other.on('error', () => {});
  const pid = (await other.query('select pg_backend_pid() as pid')).rows[0].pid;
  await client.query('select pg_terminate_backend($1)', [pid]);
  assert.equal(
    storeErrorKind(
      await other.query('select 1').then(
        () => assert.fail('answered'),
        (e) => e,
      ),
    ),
    'unavailable',
  );
  await other.end().catch(() => {});
});
