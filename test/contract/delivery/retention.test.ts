import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { purgeExpired } from '../../../src/store/retention.js';
import { setup, startReceiver } from '../../support/delivery.js';

// Payloads live apart from message records, and retention removes old payloads, attempts and settled
// deliveries and messages, while anything still to be delivered keeps what it needs, however old. (One purge at
// a time on PostgreSQL: test/postgres/delivery/retention.test.ts.)

test('retention removes old history and keeps what is still to be delivered', async (t) => {
  const s = await setup(t, { HERALD_RETENTION: '1s', HERALD_IDEMPOTENCY_TTL: '1s', HERALD_RETRY_SCHEDULE: '0s,1h' });
  let failing = true;
  const receiver = await startReceiver(t, (r) => ({ status: r.path === '/ok' || !failing ? 200 : 500 }));
  await s.endpoint(`${receiver.url}/ok`, { event_types: ['invoice.paid'] });
  await s.endpoint(`${receiver.url}/fail`, { event_types: ['customer.created'] });
  const db = s.service.store.ctx.db;

  const settled = await s.emit({ case: 'settled' }, 'invoice.paid');
  const replayed = await s.emit({ case: 'replayed' }, 'invoice.paid');
  const pending = await s.emit({ case: 'pending' }, 'customer.created');
  await s.until(settled.deliveryIds[0]!, (d) => d.status === 'success', 'settled delivered');
  await s.until(replayed.deliveryIds[0]!, (d) => d.status === 'success', 'replayed delivered');
  await s.until(pending.deliveryIds[0]!, (d) => d.attempt_count === 1, 'pending attempted once');

  // Payload bytes are their own table, not a column of the message record.
  const payload = await db
    .selectFrom('payloads')
    .selectAll()
    .where('message_id', '=', settled.id)
    .executeTakeFirstOrThrow();
  assert.deepEqual(JSON.parse(payload.body), { case: 'settled' });
  const messageRow = await db.selectFrom('messages').selectAll().where('id', '=', settled.id).executeTakeFirstOrThrow();
  assert.ok(
    !Object.values(messageRow).some((v) => typeof v === 'string' && v.includes('settled')),
    'no payload in the message row',
  );

  await sleep(1_300);
  // A replay of an old message: a fresh delivery that still needs the old payload.
  const late = await s.endpoint(`${receiver.url}/fail`, { event_types: ['invoice.paid'] });
  const replay = await s.api.post(`/api/v1/messages/${replayed.id}/replay`);
  const replayToLate = (await Promise.all((replay.body.delivery_ids as string[]).map((id) => s.delivery(id)))).find(
    (d) => d.endpoint_id === late.id,
  )!;
  await s.until(
    replayToLate.id,
    (d) => d.attempt_count === 1 && d.status === 'pending',
    'replayed delivery attempted once',
  );

  const counts = await s.service.store.purgeExpired();
  // The pending delivery's failed attempt is a row of its own; a first attempt that delivered is on its
  // delivery's row and goes with it.
  assert.ok(
    counts.attempts >= 1 && counts.deliveries >= 2 && counts.payloads >= 1 && counts.messages >= 1,
    JSON.stringify(counts),
  );

  // Settled and old: gone entirely.
  assert.equal((await s.api.get(`/api/v1/messages/${settled.id}`)).status, 404);
  assert.equal((await s.api.get(`/api/v1/deliveries/${settled.deliveryIds[0]}`)).status, 404);
  assert.equal(
    await db.selectFrom('payloads').select('message_id').where('message_id', '=', settled.id).executeTakeFirst(),
    undefined,
  );
  // Its old settled delivery is gone, but the replay keeps the message and payload.
  assert.equal((await s.api.get(`/api/v1/deliveries/${replayed.deliveryIds[0]}`)).status, 404);
  assert.equal((await s.api.get(`/api/v1/messages/${replayed.id}`)).status, 200);
  // Old pending delivery: kept with its message and payload (its old attempt history is gone).
  const stillPending = await s.delivery(pending.deliveryIds[0]!);
  assert.equal(stillPending.status, 'pending');
  assert.equal(stillPending.attempts.length, 0);
  assert.equal((await s.api.get(`/api/v1/messages/${pending.id}`)).status, 200);

  // Both still deliver their payloads intact.
  failing = false;
  const before = receiver.received.length;
  for (const id of [pending.deliveryIds[0]!, replayToLate.id]) {
    await s.api.post(`/api/v1/deliveries/${id}/retry`);
    await s.until(id, (d) => d.status === 'success', 'kept delivery delivered');
  }
  const data = receiver.received
    .slice(before)
    .map((r) => JSON.parse(r.body).data.case)
    .sort();
  assert.deepEqual(data, ['pending', 'replayed']);
});

test('the purge works in small transactions and still removes everything that is due', async (t) => {
  const s = await setup(t, { HERALD_RETENTION: '1s', HERALD_IDEMPOTENCY_TTL: '1s' });
  const receiver = await startReceiver(t);
  await s.endpoint(`${receiver.url}/ok`);
  const ids: string[] = [];
  for (let i = 0; i < 23; i++) {
    const reply = await s.api.post(
      '/api/v1/messages',
      { app_id: s.appId, event_type: 'invoice.paid', payload: { i } },
      { 'idempotency-key': `purge-${i}` },
    );
    assert.equal(reply.status, 201);
    ids.push(reply.body.delivery_ids[0]);
  }
  for (const id of ids) await s.until(id, (d) => d.status === 'success', 'delivered');
  await sleep(1_300);

  // Batches of 5: every table takes several transactions (23 rows each: 5 + 5 + 5 + 5 + 3).
  // The audit log has its own retention (audit-log.test.ts): a year here.
  const counts = await purgeExpired(s.service.store.ctx, { retentionMs: 1_000, auditRetentionMs: 365 * 86_400_000 }, 5);
  // Every attempt delivered first time: recorded on its delivery's row, it goes with the delivery.
  assert.deepEqual(counts, {
    attempts: 0,
    deliveries: 23,
    payloads: 23,
    messages: 23,
    eventIds: 0,
    idempotencyKeys: 23,
    rateCounters: 0,
    expiredLinks: 0,
    requestReplays: 0,
    auditEntries: 0,
  });
  const db = s.service.store.ctx.db;
  for (const table of ['attempt_log', 'deliveries', 'payloads', 'messages', 'idempotency_keys'] as const) {
    const row = await db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    assert.equal(Number(row.n), 0, `${table} is empty`);
  }
});
