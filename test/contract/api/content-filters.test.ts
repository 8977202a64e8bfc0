import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, startReceiver } from '../../support/delivery.js';
import { eventually } from '../../support/receiver.js';
import { assertError } from '../../support/api.js';
import { MAX_FILTER_BYTES } from '../../../src/domain/content-filter.js';

// Content filters (decisions, "Content filters and trace context"): an endpoint's MongoDB-style query over
// the outbound body decides at fan-out whether a message makes a delivery for it, on a real service with
// a real receiver, on the store under test.

test('a filter decides at fan-out which messages make a delivery, and an update takes effect at the next emit', async (t) => {
  const s = await setup(t);
  const receiver = await startReceiver(t);
  const big = await s.api.post('/api/v1/endpoints', {
    app_id: s.appId,
    url: `${receiver.url}/big`,
    filter: { 'data.amount': { $gte: 1000 }, 'data.region': { $in: ['eu', 'us'] } },
  });
  assert.equal(big.status, 201, JSON.stringify(big.body));
  assert.deepEqual(big.body.filter, { 'data.amount': { $gte: 1000 }, 'data.region': { $in: ['eu', 'us'] } });
  const all = await s.endpoint(`${receiver.url}/all`);

  const emitted = async (payload: Record<string, unknown>) => (await s.emit(payload)).deliveryIds.length;
  assert.equal(await emitted({ amount: 5000, region: 'eu' }), 2, 'matches: both endpoints');
  assert.equal(await emitted({ amount: 10, region: 'eu' }), 1, 'too small: only the unfiltered one');
  assert.equal(await emitted({ amount: 5000, region: 'apac' }), 1, 'other region');
  assert.equal(await emitted({ region: 'eu' }), 1, 'a missing field does not match $gte');
  await eventually(async () => receiver.received.filter((r) => r.path === '/big').length === 1, 10_000, 'one to /big');
  assert.equal(JSON.parse(receiver.received.find((r) => r.path === '/big')!.body).data.amount, 5000);

  // Updates take effect for the next emit; null removes the filter.
  const patched = await s.api.patch(`/api/v1/endpoints/${big.body.id}`, {
    filter: { type: 'invoice.paid', 'data.tags': 'vip' },
  });
  assert.equal(patched.status, 200, JSON.stringify(patched.body));
  assert.equal(await emitted({ tags: ['vip', 'new'] }), 2, 'an array holds the value');
  assert.equal(await emitted({ tags: ['new'] }), 1);
  assert.equal((await s.api.patch(`/api/v1/endpoints/${big.body.id}`, { filter: null })).body.filter, null);
  assert.equal(await emitted({}), 2, 'no filter: every message');
  assert.ok(all.id);

  // The filter-test route gives the same verdict, without emitting.
  await s.api.patch(`/api/v1/endpoints/${big.body.id}`, {
    filter: { $or: [{ 'data.n': { $lt: 0 } }, { 'data.name': { $regex: '^ac' } }], type: { $ne: 'invoice.void' } },
  });
  const verdict = async (payload: object, event_type?: string) =>
    (await s.api.post(`/api/v1/endpoints/${big.body.id}/filter-test`, { payload, event_type })).body.matches;
  assert.equal(await verdict({ n: -1 }), true);
  assert.equal(await verdict({ name: 'acme' }), true);
  assert.equal(await verdict({ name: 'acme' }, 'invoice.void'), false);
  assert.equal(await verdict({ n: 1, name: 'zed' }), false);
  assert.equal((await s.api.post(`/api/v1/endpoints/${all.id}/filter-test`, { payload: {} })).body.matches, true);
  assert.equal((await s.api.post('/api/v1/endpoints/ep_missing/filter-test', { payload: {} })).status, 404);
  // A draft filter is tried instead of the stored one, and saved nowhere; null tries none.
  const draft = async (filter: object | null, payload: object) =>
    (await s.api.post(`/api/v1/endpoints/${big.body.id}/filter-test`, { payload, filter })).body.matches;
  assert.equal(await draft({ 'data.n': { $gt: 10 } }, { n: 11 }), true);
  assert.equal(await draft({ 'data.n': { $gt: 10 } }, { n: -1 }), false, 'the draft, not the stored filter, decides');
  assert.equal(await draft(null, { n: 1, name: 'zed' }), true);
  assertError(
    await s.api.post(`/api/v1/endpoints/${big.body.id}/filter-test`, { payload: {}, filter: { $where: '1' } }),
    400,
    'invalid_request',
    /\$where is not supported/,
  );
  assert.equal(await verdict({ n: 1, name: 'zed' }), false, 'the stored filter is unchanged');
});

test('filters past the bounds are a 400 naming the problem, and nothing is stored', async (t) => {
  const s = await setup(t);
  const deep = (levels: number): object => (levels === 0 ? { a: 1 } : { $and: [deep(levels - 1)] });
  const cases: [unknown, RegExp][] = [
    [{ $where: 'this.data.a == 1' }, /\$where is not supported/],
    [{ 'data.a': { $expr: 1 } }, /\$expr is not supported/],
    [{ 'data.a': { $function: {} } }, /\$function is not supported/],
    [{ 'data.a': { $regex: '(a)\\1' } }, /back-reference|cannot run/],
    [{ 'data.a': { $regex: 5 } }, /\$regex must be a string/],
    [deep(8), /deeper than 8 levels/],
    [{ 'data.a': 'x'.repeat(MAX_FILTER_BYTES) }, /bytes of JSON; at most 4096/],
  ];
  for (const [filter, message] of cases) {
    assertError(
      await s.api.post('/api/v1/endpoints', { app_id: s.appId, url: 'http://127.0.0.1:9/x', filter }),
      400,
      'invalid_request',
      message,
    );
  }
  const listed = await s.api.get(`/api/v1/endpoints?app_id=${s.appId}`);
  assert.equal(listed.body.data.length, 0, 'nothing stored');
});

test('a replay reads the payload the filters need in its own transaction, and fans out by the filter', async (t) => {
  const s = await setup(t);
  const receiver = await startReceiver(t);
  const big = await s.api.post('/api/v1/endpoints', {
    app_id: s.appId,
    url: `${receiver.url}/big`,
    filter: { 'data.amount': { $gte: 1000 } },
  });
  assert.equal(big.status, 201, JSON.stringify(big.body));
  await s.endpoint(`${receiver.url}/all`);
  const small = await s.emit({ amount: 10 });
  const large = await s.emit({ amount: 5000 });
  // On SQLite a payload read outside the replay's transaction waited for it for ever, and the store with it.
  const replayed = await s.api.post(`/api/v1/messages/${small.id}/replay`, {});
  assert.equal(replayed.status, 200, JSON.stringify(replayed.body));
  assert.equal(replayed.body.delivery_ids.length, 1, 'the small one: only the unfiltered endpoint');
  const again = await s.api.post(`/api/v1/messages/${large.id}/replay`, {});
  assert.equal(again.body.delivery_ids.length, 2, 'the large one: both');
  assert.equal((await s.api.get('/api/v1/applications')).status, 200, 'the store answers after it');
});
