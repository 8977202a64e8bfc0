import { test } from 'node:test';
import assert from 'node:assert/strict';
import { insertTogether } from '../../../src/store/insert-rows.js';
import { newId } from '../../../src/domain/ids.js';
import { openStore } from '../../support/store.js';

// How an emit's rows are written: on PostgreSQL with one statement and no transaction (insertTogether),
// on SQLite in the group commit's transaction.

test('a batch whose rows pass the bound-parameter limit is written whole', { timeout: 120_000 }, async (t) => {
  const { store, scope, appId } = await openStore(t);
  // 1,100 endpoints (one made by openStore) and 10 emits in one batch: 11,000 deliveries, 143,000
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
  const count = async (table: 'messages' | 'payloads' | 'deliveries') =>
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
  // Each delivery with its first attempt queued on its row (no row of its own).
  const queued = await db
    .selectFrom('deliveries')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('run_at', 'is not', null)
    .where('next_trigger', '=', 'scheduled')
    .where('next_attempt', '=', 1)
    .where('lease_owner', 'is', null)
    .where('queued_after', 'is', null)
    .executeTakeFirstOrThrow();
  assert.equal(Number(queued.n), 11_000);
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
  const [delivery] = await db.selectFrom('deliveries').selectAll().execute();
  const stored = await db.selectFrom('messages').selectAll().executeTakeFirstOrThrow();
  const now = Date.now();
  const message = { ...stored, id: newId('message', now) };
  const newDelivery = { ...delivery!, id: newId('delivery', now), message_id: message.id };
  const count = async (table: 'messages' | 'payloads' | 'deliveries') =>
    (
      await db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n;

  // The last part's row repeats an existing delivery id: that part fails, and so must the parts before it
  // (a new delivery among them).
  await assert.rejects(
    insertTogether(db, store.dialect, [
      { table: 'messages', rows: [message] },
      { table: 'payloads', rows: [{ message_id: message.id, body: '{"a":1}', created_at: now, expires_at: null }] },
      { table: 'deliveries', rows: [newDelivery] },
      { table: 'deliveries', rows: [delivery!] },
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

  // The same rows without the repeat go in, as they were given (the delivery's queue columns too).
  await insertTogether(db, store.dialect, [
    { table: 'messages', rows: [message] },
    { table: 'deliveries', rows: [newDelivery] },
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
