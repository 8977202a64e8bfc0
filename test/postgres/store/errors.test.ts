import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { storeErrorKind } from '../../../src/store/errors.js';
import { createTestDatabase } from '../../support/service.js';

// Store errors are classified from what the real database raises: an error made by PostgreSQL here, not a
// code written by hand, is what each case checks. (SQLite's: test/sqlite/store/errors.test.ts.)

test('PostgreSQL: data, constraint, connection and shutdown errors', async (t) => {
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
