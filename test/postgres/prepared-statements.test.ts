import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type Kysely } from 'kysely';
import { openPostgres } from '../../src/store/db.js';
import { MAX_NAMED_PER_CONNECTION } from '../../src/store/prepared.js';
import { createTestDatabase, TEST_STORE } from '../support/service.js';

// The store's PostgreSQL connections name a statement the second time its text comes through
// (src/store/prepared.ts), so the server parses it once per connection and can keep its plan.

const skip = TEST_STORE !== 'postgres' ? 'runs only against PostgreSQL (HERALD_TEST_STORE=postgres)' : false;

/** The store's pools on a fresh database, one connection each, so every statement shares a session. */
async function oneConnection(t: TestContext) {
  const database = await createTestDatabase();
  const opened = openPostgres(database.env.HERALD_DATABASE_URL!, 1);
  t.after(async () => {
    await opened.close();
    await database.drop();
  });
  return opened.db as Kysely<any>;
}

/** The texts prepared in the session (read with a statement whose text is new each time, so never named itself). */
async function prepared(db: Kysely<any>): Promise<string[]> {
  const rows = await sql<{ statement: string }>`select statement from pg_prepared_statements where ${sql.lit(String(Math.random()))} <> ''`.execute(db);
  return rows.rows.map((r) => r.statement);
}

test('a statement is prepared on its second run and reused after that; one run once is not', { skip, timeout: 60_000 }, async (t) => {
  const db = await oneConnection(t);
  await sql`create table things (id int primary key, name text)`.execute(db);
  const byId = (id: number) => db.selectFrom('things').select('name').where('id', '=', id).execute();
  const once = () => db.selectFrom('things').select('id').where('name', '=', 'x').execute();

  await byId(1);
  await once();
  assert.deepEqual(await prepared(db), [], 'nothing named after one run');
  await byId(2);
  const named = await prepared(db);
  assert.equal(named.length, 1);
  assert.match(named[0]!, /select "name" from "things" where "id" = \$1/);
  await db.insertInto('things').values({ id: 3, name: 'three' }).execute();
  assert.deepEqual(await byId(3), [{ name: 'three' }], 'the prepared statement runs with new values');
  assert.equal((await prepared(db)).length, 1, 'and is not prepared again');
});

test(`a connection names at most ${MAX_NAMED_PER_CONNECTION} statements; the rest run unnamed`, { skip, timeout: 60_000 }, async (t) => {
  const db = await oneConnection(t);
  for (let i = 0; i < MAX_NAMED_PER_CONNECTION + 20; i++) {
    const text = sql`select ${sql.lit(i)}::int as n, ${'value'}::text as v`;
    for (let run = 0; run < 2; run++) assert.deepEqual((await text.execute(db)).rows, [{ n: i, v: 'value' }]);
  }
  assert.equal((await prepared(db)).length, MAX_NAMED_PER_CONNECTION);
});

test('a prepared statement whose table changed shape fails once, then is prepared again', { skip, timeout: 60_000 }, async (t) => {
  const db = await oneConnection(t);
  await sql`create table things (id int primary key)`.execute(db);
  await sql`insert into things values (1)`.execute(db);
  const all = () => db.selectFrom('things').selectAll().where('id', '>', 0).execute();
  await all();
  await all();
  assert.equal((await prepared(db)).length, 1);
  // What a newer version's migration could do while this process runs.
  await sql`alter table things add column name text default 'one'`.execute(db);
  await assert.rejects(all(), (error: { code?: string }) => error.code === '0A000');
  assert.deepEqual(await all(), [{ id: 1, name: 'one' }], 'the statement works again at once');
  assert.deepEqual(await all(), [{ id: 1, name: 'one' }]);
});
