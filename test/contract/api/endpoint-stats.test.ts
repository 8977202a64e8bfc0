import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, type Client } from '../../support/client.js';
import { eventually, Receiver } from '../../support/receiver.js';
import { assertError, createApp, emit } from '../../support/api.js';

// GET /api/v1/endpoints/{id}/stats: an endpoint's attempts counted by hour, from a real receiver that fails
// a known share of what it is sent, isolated like every resource and refusing windows it cannot answer.

const HOUR = 3_600_000;
let service: TestService;
let receiver: Receiver;
let api: Client;
let liveApi: Client;
let otherOrg: Client;

before(async () => {
  // One attempt per delivery: a failure is not retried, so the counts are exactly what the receiver answered.
  service = await startTestService({ HERALD_RETRY_SCHEDULE: '0s' });
  receiver = await new Receiver().start();
  // Every third message (n divisible by 3) is answered 500.
  receiver.respond = (request) => (JSON.parse(request.body).data.n % 3 === 0 ? { status: 500 } : { status: 204 });
  ({ test: api, live: liveApi } = await bootstrap(service.url));
  ({ test: otherOrg } = await bootstrap(service.url, 'Other org'));
});
after(async () => {
  await service?.stop();
  await receiver?.stop();
});

async function endpointWithTraffic(name: string, messages: number) {
  const app = await createApp(api, { name });
  const endpoint = (await api.post('/api/v1/endpoints', { app_id: app.id, url: `${receiver.url}/${name}` })).body;
  const before = receiver.received.length;
  const emitted = [];
  for (let n = 1; n <= messages; n++) emitted.push(await emit(api, app.id, 'invoice.paid', { n }));
  await receiver.waitFor(before + messages);
  // The receiver has answered; the outcomes are recorded a moment later.
  await eventually(
    async () => {
      const stats = (await api.get(`/api/v1/endpoints/${endpoint.id}/stats`)).body;
      return stats.totals.success + stats.totals.failure === messages;
    },
    10_000,
    'every attempt recorded',
  );
  return { app, endpoint, emitted };
}

test('counts success and failure by hour over the last 24 hours, and a retry adds its attempt', async () => {
  const started = Date.now();
  const { endpoint, emitted } = await endpointWithTraffic('counted', 12);
  const reply = await api.get(`/api/v1/endpoints/${endpoint.id}/stats`);
  assert.equal(reply.status, 200);
  const stats = reply.body;
  assert.equal(stats.object, 'endpoint_stats');
  assert.equal(stats.endpoint_id, endpoint.id);
  assert.deepEqual(stats.totals, { success: 8, failure: 4 });
  // 24 hourly buckets, oldest first, the last one the current hour; the default window ends now.
  assert.equal(stats.buckets.length, 24);
  const starts = stats.buckets.map((b: { start: string }) => Date.parse(b.start));
  for (let i = 1; i < starts.length; i++) assert.equal(starts[i] - starts[i - 1], HOUR);
  assert.equal(starts[0] % HOUR, 0);
  assert.equal(starts.at(-1), Date.now() - (Date.now() % HOUR));
  assert.equal(Date.parse(stats.since), starts[0]);
  assert.ok(Date.parse(stats.until) >= started);
  const summed = stats.buckets.reduce(
    (sum: { success: number; failure: number }, b: { success: number; failure: number }) => ({
      success: sum.success + b.success,
      failure: sum.failure + b.failure,
    }),
    { success: 0, failure: 0 },
  );
  assert.deepEqual(summed, stats.totals);
  const busy = stats.buckets.filter((b: { success: number; failure: number }) => b.success + b.failure > 0);
  assert.ok(busy.length >= 1 && busy.length <= 2, 'the attempts fall in the hour (or two) the test ran in');
  assert.ok(Date.parse(busy[0].start) >= started - (started % HOUR));

  // A failed delivery retried while the receiver answers 2xx: one more success, the failures stay.
  const failed = (await api.get(`/api/v1/messages/${emitted[2].id}/deliveries`)).body.data[0];
  assert.equal(failed.status, 'failed');
  receiver.respond = () => ({ status: 204 });
  assert.equal((await api.post(`/api/v1/deliveries/${failed.id}/retry`)).status, 200);
  const after = await eventually(
    async () => {
      const body = (await api.get(`/api/v1/endpoints/${endpoint.id}/stats`)).body;
      return body.totals.success === 9 ? body : null;
    },
    10_000,
    'the retry counted',
  );
  assert.deepEqual(after.totals, { success: 9, failure: 4 });
  receiver.respond = (request) => (JSON.parse(request.body).data.n % 3 === 0 ? { status: 500 } : { status: 204 });
});

test("p50_ms and p95_ms per hour are the nearest-rank percentiles of the hour's attempt durations", async () => {
  // The receiver takes 40 ms × n to answer message n: durations from about 40 ms to 400 ms, failures included.
  receiver.respond = (request) => {
    const n = JSON.parse(request.body).data.n;
    return { status: n % 3 === 0 ? 500 : 204, delayMs: n * 40 };
  };
  const { endpoint } = await endpointWithTraffic('timed', 10);
  receiver.respond = (request) => (JSON.parse(request.body).data.n % 3 === 0 ? { status: 500 } : { status: 204 });

  const deliveries = (await api.get(`/api/v1/deliveries?endpoint_id=${endpoint.id}`)).body.data;
  assert.equal(deliveries.length, 10);
  const attempts: { duration_ms: number; created_at: string }[] = [];
  for (const delivery of deliveries)
    attempts.push(...(await api.get(`/api/v1/deliveries/${delivery.id}`)).body.attempts);
  assert.equal(attempts.length, 10);
  const byHour = new Map<number, number[]>();
  for (const attempt of attempts) {
    const created = Date.parse(attempt.created_at);
    const hour = created - (created % HOUR);
    byHour.set(hour, [...(byHour.get(hour) ?? []), attempt.duration_ms]);
  }
  const rank = (sorted: number[], p: number) => sorted[Math.ceil(sorted.length * p) - 1];

  const stats = (await api.get(`/api/v1/endpoints/${endpoint.id}/stats`)).body;
  for (const bucket of stats.buckets) {
    const durations = byHour.get(Date.parse(bucket.start))?.sort((a, b) => a - b);
    if (!durations) {
      assert.deepEqual([bucket.p50_ms, bucket.p95_ms], [null, null], `${bucket.start} had no attempts`);
      continue;
    }
    assert.equal(bucket.p50_ms, rank(durations, 0.5), `${bucket.start} p50 of ${durations}`);
    assert.equal(bucket.p95_ms, rank(durations, 0.95), `${bucket.start} p95 of ${durations}`);
  }
  // The receiver's delays show: with every attempt in one hour, p50 is the 5th (≥ 200 ms) and p95 the 10th (≥ 400 ms).
  const timed = stats.buckets.filter((b: { p50_ms: number | null }) => b.p50_ms !== null);
  if (timed.length === 1) {
    assert.ok(timed[0].p50_ms >= 200 && timed[0].p50_ms < 400, `p50 ${timed[0].p50_ms}`);
    assert.ok(timed[0].p95_ms >= 400, `p95 ${timed[0].p95_ms}`);
  }
});

test('since and until choose the window; attempts outside it are not counted', async () => {
  const { endpoint } = await endpointWithTraffic('windowed', 3);
  const now = Date.now();
  const path = (since: number, until: number) =>
    `/api/v1/endpoints/${endpoint.id}/stats?since=${new Date(since).toISOString()}&until=${new Date(until).toISOString()}`;

  const before = await api.get(path(now - 3 * HOUR, now - 2 * HOUR));
  assert.equal(before.status, 200);
  assert.deepEqual(before.body.totals, { success: 0, failure: 0 });
  assert.equal(before.body.buckets.length, (now - 2 * HOUR) % HOUR === 0 ? 1 : 2);

  const around = await api.get(path(now - 2 * HOUR, now + 60_000));
  assert.deepEqual(around.body.totals, { success: 2, failure: 1 });
  assert.equal(around.body.since, new Date(now - 2 * HOUR).toISOString());
  assert.equal(around.body.until, new Date(now + 60_000).toISOString());

  // The longest window answers, with one bucket per hour it touches.
  const month = await api.get(path(now - 31 * 24 * HOUR, now));
  assert.equal(month.status, 200);
  assert.deepEqual(month.body.totals, { success: 2, failure: 1 });
  assert.ok(month.body.buckets.length === 744 || month.body.buckets.length === 745);
});

test('a window that is reversed, empty, longer than 31 days or not a date-time is refused with 400', async () => {
  const { endpoint } = await endpointWithTraffic('refused', 1);
  const base = `/api/v1/endpoints/${endpoint.id}/stats`;
  const t = (ms: number) => new Date(ms).toISOString();
  const now = Date.now();
  assertError(await api.get(`${base}?since=${t(now)}&until=${t(now - HOUR)}`), 400, 'invalid_request', /after since/);
  assertError(await api.get(`${base}?since=${t(now)}&until=${t(now)}`), 400, 'invalid_request', /after since/);
  assertError(
    await api.get(`${base}?since=${t(now - 31 * 24 * HOUR - 1)}&until=${t(now)}`),
    400,
    'invalid_request',
    /31 days/,
  );
  assertError(await api.get(`${base}?since=yesterday`), 400, 'invalid_request');
  assertError(
    await api.get(`${base}?until=${t(now - 10 * 24 * HOUR)}&since=${t(now - 50 * 24 * HOUR)}`),
    400,
    'invalid_request',
    /31 days/,
  );
});

test("another organization's or environment's endpoint is 404, like an unknown one", async () => {
  const { endpoint } = await endpointWithTraffic('isolated', 1);
  assertError(await otherOrg.get(`/api/v1/endpoints/${endpoint.id}/stats`), 404, 'not_found');
  assertError(await liveApi.get(`/api/v1/endpoints/${endpoint.id}/stats`), 404, 'not_found');
  assertError(await api.get('/api/v1/endpoints/ep_doesnotexist/stats'), 404, 'not_found');
  assert.equal((await api.get(`/api/v1/endpoints/${endpoint.id}/stats`)).status, 200);
});
