import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { insertTogether } from '../../src/store/insert-rows.js';
import { newId } from '../../src/domain/ids.js';
import { loadConfig } from '../../src/config.js';
import { Store } from '../../src/store/index.js';
import { BASE_ENV } from '../delivery/child.js';
import { createTestDatabase, TEST_STORE } from '../support/service.js';
import { openStore } from './helpers.js';

// How an emit's rows are written: on PostgreSQL with one statement and no transaction (insertTogether),
// on SQLite in the group commit's transaction. And which PostgreSQL writes wait for the WAL flush.

const onlyPostgres = TEST_STORE !== 'postgres' ? 'about PostgreSQL' : false;

test('a batch whose rows pass the bound-parameter limit is written whole', { timeout: 120_000 }, async (t) => {
  const { store, scope, appId } = await openStore(t);
  // 600 endpoints (one made by openStore) and 10 emits in one batch: 6,000 deliveries and tasks, 78,000
  // values for the deliveries alone (PostgreSQL binds at most 65,535 parameters per statement).
  for (let i = 1; i < 600; i++) await store.endpoints.create(scope, { appId, url: `http://127.0.0.1:9/hook/${i}` });
  const emitted = await Promise.all(
    Array.from({ length: 10 }, (_, i) => store.messages.emit({ scope, appId, eventType: 'invoice.paid', payloadJson: `{"i":${i}}`, idempotencyKey: null })),
  );
  for (const result of emitted) {
    assert.ok(result.ok);
    assert.equal(result.deliveryIds.length, 600);
  }
  const db = store.ctx.db;
  const count = async (table: 'messages' | 'payloads' | 'deliveries' | 'delivery_tasks') =>
    Number((await db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  assert.equal(await count('messages'), 10);
  assert.equal(await count('payloads'), 10);
  assert.equal(await count('deliveries'), 6_000);
  assert.equal(await count('delivery_tasks'), 6_000);
  const stored = await db.selectFrom('payloads').select('body').where('message_id', '=', emitted[3]!.ok ? emitted[3]!.message.id : '').executeTakeFirstOrThrow();
  assert.equal(stored.body, '{"i":3}');
});

test('rows written together are all written or none, without a transaction', { skip: onlyPostgres, timeout: 60_000 }, async (t) => {
  const { store, emit } = await openStore(t);
  await emit(1);
  const db = store.ctx.db;
  const taken = await db.selectFrom('delivery_tasks').select('id').executeTakeFirstOrThrow();
  const [delivery] = await db.selectFrom('deliveries').selectAll().execute();
  const now = Date.now();
  const message = { ...(await db.selectFrom('messages').selectAll().executeTakeFirstOrThrow()), id: newId('message', now) };
  const newDelivery = { ...delivery!, id: newId('delivery', now), message_id: message.id };
  // The last table's row repeats an existing task id: that statement fails, and so must the parts before it.
  await assert.rejects(
    insertTogether(db, store.dialect, [
      { table: 'messages', rows: [message] },
      { table: 'payloads', rows: [{ message_id: message.id, body: '{"text":"it\'s \\"quoted\\" – ✓"}', created_at: now }] },
      { table: 'deliveries', rows: [newDelivery] },
      { table: 'delivery_tasks', rows: [{ id: taken.id, delivery_id: newDelivery.id, endpoint_id: newDelivery.endpoint_id, trigger: 'scheduled', attempt_number: 1, run_at: now, lease_owner: null }] },
    ]),
    /duplicate key/,
  );
  assert.equal((await db.selectFrom('messages').select('id').where('id', '=', message.id).execute()).length, 0);
  assert.equal((await db.selectFrom('payloads').select('message_id').where('message_id', '=', message.id).execute()).length, 0);
  assert.equal((await db.selectFrom('deliveries').select('id').where('id', '=', newDelivery.id).execute()).length, 0);

  // The same rows with a new task id go in, text and numbers as they were given.
  const body = '{"text":"it\'s \\"quoted\\" – ✓","big":9007199254740991}';
  await insertTogether(db, store.dialect, [
    { table: 'messages', rows: [message] },
    { table: 'payloads', rows: [{ message_id: message.id, body, created_at: now }] },
    { table: 'deliveries', rows: [newDelivery] },
    { table: 'delivery_tasks', rows: [{ id: newId('task', now), delivery_id: newDelivery.id, endpoint_id: newDelivery.endpoint_id, trigger: 'scheduled', attempt_number: 1, run_at: now, lease_owner: null }] },
  ]);
  assert.equal((await db.selectFrom('payloads').select('body').where('message_id', '=', message.id).executeTakeFirstOrThrow()).body, body);
  assert.deepEqual(await db.selectFrom('deliveries').selectAll().where('id', '=', newDelivery.id).executeTakeFirstOrThrow(), newDelivery);
});

test("the delivery worker's queue commits without waiting for the WAL flush; emits and the API wait", { skip: onlyPostgres, timeout: 60_000 }, async (t) => {
  // Options given in the URL (or PGOPTIONS) apply to both pools: the queue's setting is made per session.
  const database = await createTestDatabase();
  const url = `${database.env.HERALD_DATABASE_URL}?options=${encodeURIComponent('-c statement_timeout=30000')}`;
  const store = await Store.open(loadConfig({ ...BASE_ENV, ...database.env, HERALD_DATABASE_URL: url }));
  t.after(async () => {
    await store.close();
    await database.drop();
  });
  const settings = async (db: typeof store.ctx.db) =>
    (await sql<{ commit: string; timeout: string }>`select current_setting('synchronous_commit') as commit, current_setting('statement_timeout') as timeout`.execute(db)).rows[0];
  assert.deepEqual(await settings(store.ctx.db), { commit: 'on', timeout: '30s' });
  assert.deepEqual(await settings(store.queue['ctx'].db), { commit: 'off', timeout: '30s' });
});

test('payloads keep every character through the batch write', { timeout: 60_000 }, async (t) => {
  const { store, emit } = await openStore(t);
  const payloads = [
    JSON.stringify({ quotes: '"\\"', backslashes: '\\\\', nul: '\u0000', controls: '\n\t\b\f\r\u0001', separators: '\u2028\u2029' }),
    JSON.stringify({ emoji: '🎉✓', bom: '\ufeff', max: '\uffff', text: "it's" }),
    JSON.stringify({ numbers: [9007199254740993, 1e300, -0.0001, 123456789012345678901234567890] }).replace('9007199254740992', '9007199254740993'),
    JSON.stringify({ big: '\\"'.repeat(100_000) }),
  ];
  const ids = await Promise.all(payloads.map((payload) => emit(1, () => payload).then(([id]) => id!)));
  for (const [i, id] of ids.entries()) assert.equal(await store.messages.payload(id), payloads[i], `payload ${i}`);
});
