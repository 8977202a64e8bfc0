import { test } from 'node:test';
import assert from 'node:assert/strict';
import { insertTogether } from '../../../src/store/insert-rows.js';
import { newId } from '../../../src/domain/ids.js';
import { openStore } from '../../support/store.js';

// How an emit's rows are written: on PostgreSQL with one statement and no transaction (insertTogether),
// on SQLite in the group commit's transaction.

test('a batch whose rows pass the bound-parameter limit is written whole', { timeout: 120_000 }, async (t) => {
  const { store, scope, appId } = await openStore(t);
  // 1,100 endpoints (one made by openStore) and 10 emits in one batch: 11,000 deliveries and tasks, 143,000
  // values for the deliveries alone (PostgreSQL binds at most 65,535 parameters per statement), and more
  // rows than one JSON parameter of insertTogether takes.
  for (let i = 1; i < 1_100; i++) await store.endpoints.create(scope, { appId, url: `http://127.0.0.1:9/hook/${i}` });
  const emitted = await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      store.messages.emit({ scope, appId, eventType: 'invoice.paid', payloadJson: `{"i":${i}}`, idempotencyKey: null }),
    ),
  );
  for (const result of emitted) {
    assert.ok(result.ok);
    assert.equal(result.deliveryIds.length, 1_100);
  }
  const db = store.ctx.db;
  const count = async (table: 'messages' | 'payloads' | 'deliveries' | 'delivery_tasks') =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  assert.equal(await count('messages'), 10);
  assert.equal(await count('payloads'), 10);
  assert.equal(await count('deliveries'), 11_000);
  assert.equal(await count('delivery_tasks'), 11_000);
  const stored = await db
    .selectFrom('payloads')
    .select('body')
    .where('message_id', '=', emitted[3]!.ok ? emitted[3]!.message.id : '')
    .executeTakeFirstOrThrow();
  assert.equal(stored.body, '{"i":3}');
});

test('rows written together are all written or none, without a transaction', { timeout: 60_000 }, async (t) => {
  const { store, emit } = await openStore(t);
  await emit(1);
  const db = store.ctx.db;
  const taken = await db.selectFrom('delivery_tasks').select('id').executeTakeFirstOrThrow();
  const [delivery] = await db.selectFrom('deliveries').selectAll().execute();
  const stored = await db.selectFrom('messages').selectAll().executeTakeFirstOrThrow();
  const now = Date.now();
  const message = { ...stored, id: newId('message', now) };
  const newDelivery = { ...delivery!, id: newId('delivery', now), message_id: message.id };
  const task = (id: string) => ({
    id,
    delivery_id: newDelivery.id,
    endpoint_id: newDelivery.endpoint_id,
    trigger: 'scheduled' as const,
    attempt_number: 1,
    run_at: now,
    lease_owner: null,
  });
  const count = async (table: 'messages' | 'payloads' | 'deliveries') =>
    (
      await db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n;

  // The last table's row repeats an existing task id: that part fails, and so must the parts before it.
  await assert.rejects(
    insertTogether(db, store.dialect, [
      { table: 'messages', rows: [message] },
      { table: 'payloads', rows: [{ message_id: message.id, body: '{"a":1}', created_at: now, expires_at: null }] },
      { table: 'deliveries', rows: [newDelivery] },
      { table: 'delivery_tasks', rows: [task(taken.id)] },
    ]),
    /duplicate key|UNIQUE constraint/,
  );
  // One table whose rows take several statements on SQLite (600 rows), the last one a repeat.
  const many = Array.from({ length: 600 }, () => ({ ...stored, id: newId('message', now) }));
  await assert.rejects(
    insertTogether(db, store.dialect, [{ table: 'messages', rows: [...many, stored] }]),
    /duplicate key|UNIQUE constraint/,
  );
  assert.deepEqual(
    [Number(await count('messages')), Number(await count('payloads')), Number(await count('deliveries'))],
    [1, 1, 1],
    'nothing of either write is left',
  );

  // The same rows with a new task id go in, as they were given.
  await insertTogether(db, store.dialect, [
    { table: 'messages', rows: [message] },
    { table: 'deliveries', rows: [newDelivery] },
    { table: 'delivery_tasks', rows: [task(newId('task', now))] },
  ]);
  assert.deepEqual(
    await db.selectFrom('messages').selectAll().where('id', '=', message.id).executeTakeFirstOrThrow(),
    message,
  );
  assert.deepEqual(
    await db.selectFrom('deliveries').selectAll().where('id', '=', newDelivery.id).executeTakeFirstOrThrow(),
    newDelivery,
  );
});

test('payloads keep every character through the batch write', { timeout: 60_000 }, async (t) => {
  const { store, emit } = await openStore(t);
  const payloads = [
    JSON.stringify({
      quotes: '"\\"',
      backslashes: '\\\\',
      nul: '\u0000',
      controls: '\n\t\b\f\r\u0001',
      separators: '\u2028\u2029',
    }),
    JSON.stringify({ emoji: '🎉✓', bom: '\ufeff', max: '\uffff', text: "it's" }),
    // Written as text: 2^53 + 1 is not a double, and the stored text must keep it as sent.
    '{"numbers":[9007199254740993,1e+300,-0.0001,1.2345678901234568e+29]}',
    JSON.stringify({ big: '\\"'.repeat(100_000) }),
  ];
  const ids = await Promise.all(payloads.map((payload) => emit(1, () => payload).then(([id]) => id!)));
  for (const [i, id] of ids.entries()) assert.equal(await store.messages.payload(id), payloads[i], `payload ${i}`);
});
