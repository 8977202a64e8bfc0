import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { sql, type Kysely } from 'kysely';
import { loadConfig } from '../../../src/config.js';
import { Store } from '../../../src/store/index.js';
import type { Database } from '../../../src/store/schema.js';
import { BASE_ENV } from '../../support/child.js';
import { createTestDatabase } from '../../support/service.js';

// The delivery worker's queue has a pool of its own whose sessions commit without waiting for the WAL
// flush and plan with random_page_cost at most 1.1 (src/store/db.ts); everything else commits synchronously
// and plans with the server's settings.

const settings = async (db: Kysely<Database>) =>
  (
    await sql<{
      commit: string;
      timeout: string;
      pageCost: string;
    }>`select current_setting('synchronous_commit') as commit,
      current_setting('statement_timeout') as timeout, current_setting('random_page_cost') as "pageCost"`.execute(db)
  ).rows[0];

/** The test database's URL with `options` added to its query string. */
function withOptions(url: string, options: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('options', options);
  return parsed.toString();
}

/** A store on a fresh database whose URL carries `options`; closed, and the database dropped, after the test. */
async function storeWithOptions(t: TestContext, options: string): Promise<Store> {
  const database = await createTestDatabase();
  const store = await Store.open(
    loadConfig({
      ...BASE_ENV,
      ...database.env,
      HERALD_DATABASE_URL: withOptions(database.env.HERALD_DATABASE_URL!, options),
    }),
  );
  t.after(async () => {
    await store.close();
    await database.drop();
  });
  return store;
}

test("the queue's sessions commit asynchronously, the rest synchronously, and both keep the URL's options", {
  timeout: 60_000,
}, async (t) => {
  const store = await storeWithOptions(t, '-c statement_timeout=30000');
  assert.deepEqual(await settings(store.ctx.db), { commit: 'on', timeout: '30s', pageCost: '4' });
  assert.deepEqual(await settings(store.queueDb), { commit: 'off', timeout: '30s', pageCost: '1.1' });
});

test("the queue's sessions compile no statement: the heartbeat's read of the workers table is planned without JIT", {
  timeout: 60_000,
}, async (t) => {
  const store = await storeWithOptions(t, '-c statement_timeout=30000');
  // With seq scans off, the read no index serves is costed far above jit_above_cost; with JIT on, the
  // server would compile it with LLVM on every heartbeat.
  const plan = async (db: Kysely<Database>) =>
    JSON.stringify(
      (await sql`explain (format json) select id from workers where beat_at < ${Date.now()}`.execute(db)).rows,
    );
  const queuePlan = await plan(store.queueDb);
  assert.match(queuePlan, /"Total Cost":\s*1\d{10}/, 'the queue session plans with seq scans disabled');
  assert.doesNotMatch(queuePlan, /JIT/);
  const jit = await sql<{ jit: string }>`select current_setting('jit') as jit`.execute(store.queueDb);
  assert.equal(jit.rows[0]?.jit, 'off');
});

test("the queue's sessions keep a random_page_cost set lower than theirs", { timeout: 60_000 }, async (t) => {
  const store = await storeWithOptions(t, '-c random_page_cost=1');
  assert.equal((await settings(store.queueDb))?.pageCost, '1');
});

test('a queue connection lost while it is being set up is dropped from the pool, not leaked', {
  timeout: 60_000,
}, async (t) => {
  const database = await createTestDatabase();
  const target = new URL(database.env.HERALD_DATABASE_URL!);
  // A proxy in front of PostgreSQL that cuts the connection when it sees the session's SET (twice).
  let cuts = 2;
  const proxy = net.createServer((client) => {
    const server = net.connect(Number(target.port || 5432), target.hostname);
    server.on('data', (data) => client.write(data));
    client.on('data', (data) => {
      if (cuts > 0 && data.toString('latin1').includes('set synchronous_commit')) {
        cuts--;
        client.destroy();
        server.destroy();
      } else {
        server.write(data);
      }
    });
    for (const socket of [client, server]) socket.on('error', () => {});
    client.on('close', () => server.destroy());
    server.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const proxied = new URL(target);
  proxied.hostname = '127.0.0.1';
  proxied.port = String((proxy.address() as net.AddressInfo).port);
  // Two connections per pool: two leaked ones would leave the queue nothing to run on.
  const store = await Store.open(
    loadConfig({ ...BASE_ENV, ...database.env, HERALD_DATABASE_URL: proxied.toString(), HERALD_DB_POOL_SIZE: '2' }),
  );
  t.after(async () => {
    proxy.close();
    await database.drop();
  });
  const queueDb = store.queueDb;
  for (let i = 0; i < 2; i++) await assert.rejects(settings(queueDb), /terminated|ended|closed/i);
  const started = Date.now();
  assert.deepEqual(await settings(queueDb), { commit: 'off', timeout: '0', pageCost: '1.1' });
  assert.ok(Date.now() - started < 4_000, 'the third query got a connection without waiting for the pool to time out');
  // Nothing is left checked out: closing the store finishes.
  const closed = await Promise.race([
    store.close().then(() => true),
    new Promise((resolve) => setTimeout(() => resolve(false), 5_000)),
  ]);
  assert.equal(closed, true, 'the store closed');
});
