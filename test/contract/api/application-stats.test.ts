import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, type Client } from '../../support/client.js';
import { eventually, Receiver } from '../../support/receiver.js';
import { assertError, createApp, emit } from '../../support/api.js';

// GET /api/v1/applications/{id}/stats: an application's attempts counted by hour and event type, from a
// real receiver behind two endpoints, one of which fails the messages marked to fail: exact counts per
// event type, the 20 busiest by name and the rest as `other`, isolated like every resource.

const HOUR = 3_600_000;
let service: TestService;
let receiver: Receiver;
let api: Client;
let liveApi: Client;
let otherOrg: Client;

interface Counts {
  success: number;
  failure: number;
}
const TYPES = Array.from({ length: 22 }, (_, i) => `t.${String(i + 1).padStart(2, '0')}`);

before(async () => {
  // One attempt per delivery: a failure is not retried, so the counts are exactly what the receiver answered.
  service = await startTestService({ HERALD_RETRY_SCHEDULE: '0s' });
  receiver = await new Receiver().start();
  // Endpoint "b" answers 500 to a message whose payload says fail; everything else is answered 204.
  receiver.respond = (request) =>
    request.path.startsWith('/b-') && JSON.parse(request.body).data.fail ? { status: 500 } : { status: 204 };
  ({ test: api, live: liveApi } = await bootstrap(service.url));
  ({ test: otherOrg } = await bootstrap(service.url, 'Other org'));
  for (const name of ['a.busy', 'b.mid', ...TYPES])
    assert.equal((await api.post('/api/v1/event-types', { name })).status, 201);
});
after(async () => {
  await service?.stop();
  await receiver?.stop();
});

async function waitForAttempts(appId: string, attempts: number) {
  return eventually(
    async () => {
      const stats = (await api.get(`/api/v1/applications/${appId}/stats`)).body;
      return stats.totals.success + stats.totals.failure === attempts ? stats : null;
    },
    15_000,
    `${attempts} attempts recorded`,
  );
}

test('counts attempts by hour and event type: the 20 busiest by name, the others summed as other', async () => {
  const app = await createApp(api, { name: 'Typed', uid: 'typed-app' });
  for (const side of ['a', 'b'])
    assert.equal(
      (await api.post('/api/v1/endpoints', { app_id: app.id, url: `${receiver.url}/${side}-typed` })).status,
      201,
    );
  // Another application's traffic in the same organization does not count.
  const neighbour = await createApp(api, { name: 'Neighbour' });
  await api.post('/api/v1/endpoints', { app_id: neighbour.id, url: `${receiver.url}/a-neighbour` });
  for (let i = 0; i < 2; i++) await emit(api, neighbour.id, 'a.busy', { fail: false });

  const started = Date.now();
  for (let i = 0; i < 5; i++) await emit(api, app.id, 'a.busy', { fail: false });
  for (let i = 0; i < 3; i++) await emit(api, app.id, 'b.mid', { fail: true });
  for (const type of TYPES) await emit(api, app.id, type, { fail: type === 't.05' });
  // 30 messages, each to two endpoints.
  await waitForAttempts(app.id, 60);

  const reply = await api.get(`/api/v1/applications/${app.id}/stats`);
  assert.equal(reply.status, 200);
  const stats = reply.body;
  assert.equal(stats.object, 'application_stats');
  assert.equal(stats.app_id, app.id);
  // Most attempts first, ties by name: t.19 to t.22 are past the 20th and summed as other.
  const expected = [
    { event_type: 'a.busy', success: 10, failure: 0 },
    { event_type: 'b.mid', success: 3, failure: 3 },
    ...TYPES.slice(0, 18).map((event_type) =>
      event_type === 't.05' ? { event_type, success: 1, failure: 1 } : { event_type, success: 2, failure: 0 },
    ),
  ];
  assert.deepEqual(stats.event_types, expected);
  assert.deepEqual(stats.other, { success: 8, failure: 0 });
  assert.deepEqual(stats.totals, { success: 56, failure: 4 });

  // 24 hourly buckets ending with the current hour; each hour's counts add up, and the hours add up to the window's.
  assert.equal(stats.buckets.length, 24);
  assert.equal(Date.parse(stats.buckets.at(-1).start), Date.now() - (Date.now() % HOUR));
  const byType = new Map<string, Counts>();
  const summed = { success: 0, failure: 0 };
  let other = { success: 0, failure: 0 };
  for (const bucket of stats.buckets) {
    const parts = [...bucket.event_types, bucket.other];
    assert.deepEqual(
      { success: bucket.success, failure: bucket.failure },
      parts.reduce(
        (sum: Counts, c: Counts) => ({ success: sum.success + c.success, failure: sum.failure + c.failure }),
        {
          success: 0,
          failure: 0,
        },
      ),
      bucket.start,
    );
    for (const counts of bucket.event_types) {
      assert.ok(counts.success + counts.failure > 0, 'a bucket names only the types it has attempts of');
      const sum = byType.get(counts.event_type) ?? { success: 0, failure: 0 };
      byType.set(counts.event_type, { success: sum.success + counts.success, failure: sum.failure + counts.failure });
    }
    other = { success: other.success + bucket.other.success, failure: other.failure + bucket.other.failure };
    summed.success += bucket.success;
    summed.failure += bucket.failure;
  }
  assert.deepEqual(summed, stats.totals);
  assert.deepEqual(other, stats.other);
  assert.deepEqual(
    expected.map(({ event_type }) => ({ event_type, ...byType.get(event_type) })),
    expected,
  );
  const busy = stats.buckets.filter((b: Counts) => b.success + b.failure > 0);
  assert.ok(busy.length >= 1 && busy.length <= 2, 'the attempts fall in the hour (or two) the test ran in');
  assert.ok(Date.parse(busy[0].start) >= started - (started % HOUR));

  // The uid answers the same; a window before the traffic counts nothing.
  const byUid = (await api.get(`/api/v1/applications/typed-app/stats?since=${stats.since}&until=${stats.until}`)).body;
  assert.deepEqual(byUid, stats);
  const t = (ms: number) => new Date(ms).toISOString();
  const earlier = (
    await api.get(`/api/v1/applications/${app.id}/stats?since=${t(started - 3 * HOUR)}&until=${t(started - 2 * HOUR)}`)
  ).body;
  assert.deepEqual(
    [earlier.event_types, earlier.other, earlier.totals],
    [[], { success: 0, failure: 0 }, { success: 0, failure: 0 }],
  );
});

test('an application without endpoints answers zeros; a window it cannot answer is 400', async () => {
  const app = await createApp(api, { name: 'Quiet' });
  const stats = (await api.get(`/api/v1/applications/${app.id}/stats`)).body;
  assert.deepEqual(
    [stats.event_types, stats.other, stats.totals],
    [[], { success: 0, failure: 0 }, { success: 0, failure: 0 }],
  );
  assert.equal(stats.buckets.length, 24);
  for (const bucket of stats.buckets) assert.deepEqual(bucket.event_types, []);

  const base = `/api/v1/applications/${app.id}/stats`;
  const t = (ms: number) => new Date(ms).toISOString();
  const now = Date.now();
  assertError(await api.get(`${base}?since=${t(now)}&until=${t(now - HOUR)}`), 400, 'invalid_request', /after since/);
  assertError(
    await api.get(`${base}?since=${t(now - 31 * 24 * HOUR - 1)}&until=${t(now)}`),
    400,
    'invalid_request',
    /31 days/,
  );
  assertError(await api.get(`${base}?since=yesterday`), 400, 'invalid_request');
  const month = await api.get(`${base}?since=${t(now - 31 * 24 * HOUR)}&until=${t(now)}`);
  assert.equal(month.status, 200);
  assert.ok(month.body.buckets.length === 744 || month.body.buckets.length === 745);
});

test("another organization's or environment's application is 404, like an unknown one", async () => {
  const app = await createApp(api, { name: 'Isolated', uid: 'isolated-app' });
  assertError(await otherOrg.get(`/api/v1/applications/${app.id}/stats`), 404, 'not_found');
  assertError(await otherOrg.get('/api/v1/applications/isolated-app/stats'), 404, 'not_found');
  assertError(await liveApi.get(`/api/v1/applications/${app.id}/stats`), 404, 'not_found');
  assertError(await api.get('/api/v1/applications/app_doesnotexist/stats'), 404, 'not_found');
  assert.equal((await api.get(`/api/v1/applications/${app.id}/stats`)).status, 200);
});
