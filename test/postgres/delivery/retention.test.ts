import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { setup, startReceiver } from '../../support/delivery.js';

// Retention on PostgreSQL, where every worker process runs the purge on the one database and a
// transaction-scoped advisory lock lets one batch run at a time. (What every store shares:
// test/contract/delivery/retention.test.ts.)

test('on PostgreSQL one purge runs at a time: a purge that finds another running does nothing', async (t) => {
  const s = await setup(t, { HERALD_RETENTION: '1s', HERALD_IDEMPOTENCY_TTL: '1s' });
  const receiver = await startReceiver(t);
  await s.endpoint(`${receiver.url}/ok`);
  const old = await s.emit({ case: 'old' });
  await s.until(old.deliveryIds[0]!, (d) => d.status === 'success', 'delivered');
  await sleep(1_300);

  const pool = s.service.store.pool!;
  const holder = await pool.connect();
  try {
    // Another process's purge, in the middle of its transaction.
    await holder.query('begin');
    await holder.query('select pg_advisory_xact_lock(1212502604)');
    const skipped = await s.service.store.purgeExpired();
    assert.deepEqual(skipped, {
      payloads: 0,
      attempts: 0,
      deliveries: 0,
      messages: 0,
      eventIds: 0,
      idempotencyKeys: 0,
      rateCounters: 0,
      expiredLinks: 0,
      requestReplays: 0,
      auditEntries: 0,
    });
    assert.equal((await s.api.get(`/api/v1/messages/${old.id}`)).status, 200, 'nothing was removed');
    await holder.query('commit');
  } finally {
    // Released before the service's pool closes, which waits for every checked-out client.
    holder.release();
  }
  const counts = await s.service.store.purgeExpired();
  assert.ok(counts.messages >= 1, JSON.stringify(counts));
  assert.equal((await s.api.get(`/api/v1/messages/${old.id}`)).status, 404);
});
