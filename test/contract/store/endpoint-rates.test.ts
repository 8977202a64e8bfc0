import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../support/store.js';

// An endpoint's rate time (`endpoint_rates`, one row per rate-limited endpoint that sent) lives outside
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
  for (const { row } of [alone, withApp, kept]) assert.equal((await store.queue.takeStarts(row.id, 5, 2)).length, 2);
  const counters = async () =>
    (await store.ctx.db.selectFrom('endpoint_rates').select('endpoint_id').orderBy('endpoint_id').execute()).map(
      (r) => r.endpoint_id,
    );
  assert.deepEqual(await counters(), [alone.row.id, withApp.row.id, kept.row.id].sort());

  assert.equal(await store.endpoints.delete(scope, alone.row.id), true);
  assert.deepEqual(await counters(), [withApp.row.id, kept.row.id].sort());
  assert.equal(await store.applications.delete(scope, other.id), true);
  assert.deepEqual(await counters(), [kept.row.id]);
  // The kept endpoint's time is untouched: its next three starts (with the two granted, five in its next
  // second and one at its end) follow the first two, 200 ms apart.
  const next = await store.queue.takeStarts(kept.row.id, 5, 10);
  assert.ok(next.length >= 3 && next.length <= 4, `${next.length} more starts`);
  assert.ok(next.every((at, i) => i === 0 || at - next[i - 1]! === 200_000));
});

test("the retention purge removes a deleted endpoint's counter that a worker wrote again, and no other", async (t) => {
  const { store, scope, appId } = await openStore(t);
  const url = 'http://127.0.0.1:9/hook';
  const [gone, kept] = await Promise.all([
    store.endpoints.create(scope, { appId, url, rateLimit: 5 }),
    store.endpoints.create(scope, { appId, url, rateLimit: 5 }),
  ]);
  assert.equal(await store.endpoints.delete(scope, gone.row.id), true);
  // A worker that claimed the endpoint's attempts before the delete takes one more start.
  assert.equal((await store.queue.takeStarts(gone.row.id, 5, 1)).length, 1);
  assert.equal((await store.queue.takeStarts(kept.row.id, 5, 1)).length, 1);
  const purged = await store.purgeExpired();
  assert.equal(purged.rateCounters, 1);
  const left = await store.ctx.db.selectFrom('endpoint_rates').select('endpoint_id').execute();
  assert.deepEqual(
    left.map((r) => r.endpoint_id),
    [kept.row.id],
  );
});

test('starts taken by many at once never come closer than the interval, so no second holds more than the limit', async (t) => {
  const { store, scope, appId } = await openStore(t);
  const { row } = await store.endpoints.create(scope, { appId, url: 'http://127.0.0.1:9/hook', rateLimit: 20 });
  const granted = (await Promise.all(Array.from({ length: 12 }, () => store.queue.takeStarts(row.id, 20, 5)))).flat();
  granted.sort((a, b) => a - b);
  assert.ok(granted.length >= 5, `${granted.length} starts granted`);
  assert.equal(new Set(granted).size, granted.length, 'no start granted twice');
  for (let i = 1; i < granted.length; i++) assert.ok(granted[i]! - granted[i - 1]! >= 50_000);
  for (let i = 0, j = 0; i < granted.length; i++) {
    while (granted[j]! <= granted[i]! - 1_000_000) j++;
    assert.ok(i - j + 1 <= 20);
  }
});
