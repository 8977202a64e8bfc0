import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from './helpers.js';

// An endpoint's rate counter (`endpoint_rates`, one row per rate-limited endpoint that sent) lives outside
// its row; deleting the endpoint, alone or with its application, removes it in the same transaction.

test('deleting an endpoint, or its application, removes its rate counter and no other', async (t) => {
  const { store, scope, appId } = await openStore(t);
  const other = await store.applications.create(scope, { name: 'other' });
  const url = 'http://127.0.0.1:9/hook';
  const [alone, withApp, kept] = await Promise.all([
    store.endpoints.create(scope, { appId, url, rateLimit: 5 }),
    store.endpoints.create(scope, { appId: other.id, url, rateLimit: 5 }),
    store.endpoints.create(scope, { appId, url, rateLimit: 5 }),
  ]);
  const window = Math.floor(Date.now() / 1000);
  for (const { row } of [alone, withApp, kept]) assert.equal(await store.queue.takeRate(row.id, 5, window, 2), 2);
  const counters = async () =>
    (await store.ctx.db.selectFrom('endpoint_rates').select('endpoint_id').orderBy('endpoint_id').execute()).map(
      (r) => r.endpoint_id,
    );
  assert.deepEqual(await counters(), [alone.row.id, withApp.row.id, kept.row.id].sort());

  assert.equal(await store.endpoints.delete(scope, alone.row.id), true);
  assert.deepEqual(await counters(), [withApp.row.id, kept.row.id].sort());
  assert.equal(await store.applications.delete(scope, other.id), true);
  assert.deepEqual(await counters(), [kept.row.id]);
  // The kept endpoint's counter is untouched: its second still has 3 of 5 left.
  assert.equal(await store.queue.takeRate(kept.row.id, 5, window, 5), 3);
});

test("the retention purge removes a deleted endpoint's counter that a worker wrote again, and no other", async (t) => {
  const { store, scope, appId } = await openStore(t);
  const url = 'http://127.0.0.1:9/hook';
  const [gone, kept] = await Promise.all([
    store.endpoints.create(scope, { appId, url, rateLimit: 5 }),
    store.endpoints.create(scope, { appId, url, rateLimit: 5 }),
  ]);
  const window = Math.floor(Date.now() / 1000);
  assert.equal(await store.endpoints.delete(scope, gone.row.id), true);
  // A worker that claimed the endpoint's attempts before the delete counts one more request.
  assert.equal(await store.queue.takeRate(gone.row.id, 5, window, 1), 1);
  assert.equal(await store.queue.takeRate(kept.row.id, 5, window, 1), 1);
  const purged = await store.purgeExpired();
  assert.equal(purged.rateCounters, 1);
  const left = await store.ctx.db.selectFrom('endpoint_rates').select('endpoint_id').execute();
  assert.deepEqual(
    left.map((r) => r.endpoint_id),
    [kept.row.id],
  );
});
