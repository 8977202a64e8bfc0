import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService } from '../../support/service.js';
import { bootstrap, Client, type Reply } from '../../support/client.js';
import { assertError, createApp, createEndpoint, emit } from '../../support/api.js';
import { parseMetrics, scrape } from '../../support/scrape.js';

// GET /metrics on the API (roles `api` and `all`): the text format, access, what the API counts itself
// (requests by route pattern, 429s, messages created) and the gauges read from the store. Runs once per
// store, as every file under test/contract/ does.

const NAMES: [string, string][] = [
  ['herald_messages_emitted_total', 'counter'],
  ['herald_delivery_attempts_total', 'counter'],
  ['herald_delivery_attempt_duration_seconds', 'histogram'],
  ['herald_delivery_latency_seconds', 'histogram'],
  ['herald_queue_due_attempts', 'gauge'],
  ['herald_queue_oldest_due_age_seconds', 'gauge'],
  ['herald_endpoints', 'gauge'],
  ['herald_http_requests_total', 'counter'],
  ['herald_http_request_duration_seconds', 'histogram'],
  ['herald_rate_limited_total', 'counter'],
  ['process_cpu_user_seconds_total', 'counter'],
  ['process_resident_memory_bytes', 'gauge'],
  ['nodejs_eventloop_lag_seconds', 'gauge'],
];

test('GET /metrics: every metric, open without a key, never rate limited; 429s are counted', {
  timeout: 60_000,
}, async (t) => {
  const limit = 3;
  const service = await startTestService({
    HERALD_ROLE: 'api',
    HERALD_DEFAULT_PLAN: 'starter',
    HERALD_PLANS: `starter:${limit}`,
  });
  t.after(() => service.stop());
  const first = await scrape(service.url);
  for (const [name, type] of NAMES) assert.equal(first.types.get(name), type, `TYPE of ${name}`);

  // Twenty scrapes at once from one address: none is refused (a public route spends no counter).
  const scrapes = await Promise.all(Array.from({ length: 20 }, () => fetch(`${service.url}/metrics`)));
  assert.deepEqual(
    scrapes.map((r) => r.status),
    Array(20).fill(200),
  );

  // An organization at 3 requests a second sends 8 at once: what the limit refused is what is counted.
  const { test: api } = await bootstrap(service.url);
  const replies = await Promise.all(Array.from({ length: 8 }, () => api.get('/api/v1/applications')));
  const refused = replies.filter((r) => r.status === 429).length;
  assert.ok(refused >= 8 - limit, `only ${refused} of 8 refused`);
  assert.equal(refused + replies.filter((r) => r.status === 200).length, 8);
  const after = await scrape(service.url);
  assert.equal(after.value('herald_rate_limited_total'), refused);
  assert.equal(after.value('herald_http_requests_total', { route: '/api/v1/applications', status: '429' }), refused);
  assert.equal(
    after.value('herald_http_requests_total', { route: '/api/v1/applications', status: '200' }),
    8 - refused,
  );
  // The scrapes themselves are counted as requests, and none was refused.
  assert.equal(after.value('herald_http_requests_total', { route: '/metrics', status: '200' }), 21);
  assert.equal(after.sum('herald_http_requests_total', { route: '/metrics' }), 21);
});

test('with HERALD_METRICS_TOKEN, /metrics needs that bearer token (an API key does not open it)', {
  timeout: 60_000,
}, async (t) => {
  const token = 'metrics-token-0123456789abcdef';
  const service = await startTestService({ HERALD_ROLE: 'all', HERALD_METRICS_TOKEN: token });
  t.after(() => service.stop());
  const { test: api } = await bootstrap(service.url);
  const anonymous = new Client(service.url);
  assertError(await anonymous.get('/metrics'), 401, 'unauthorized', /HERALD_METRICS_TOKEN/);
  assertError(await anonymous.get('/metrics', { authorization: `Bearer ${token}x` }), 401, 'unauthorized');
  assertError(await anonymous.get('/metrics', { authorization: token }), 401, 'unauthorized');
  assertError(await api.get('/metrics'), 401, 'unauthorized');
  const reply = await anonymous.get('/metrics', { authorization: `bearer  ${token}` });
  assert.equal(reply.status, 200);
  const metrics = parseMetrics(reply.body as string);
  assert.equal(metrics.types.get('herald_delivery_attempts_total'), 'counter');
  assert.equal(metrics.value('herald_http_requests_total', { route: '/metrics', status: '401' }), 4);
});

test('requests are labelled by route pattern, never by URL; unknown paths share one label', {
  timeout: 60_000,
}, async (t) => {
  const service = await startTestService({ HERALD_ROLE: 'api' });
  t.after(() => service.stop());
  const { test: api } = await bootstrap(service.url);
  const app = await createApp(api);
  const endpoint = await createEndpoint(api, app.id);
  const statuses = async (replies: Promise<Reply>[]) => (await Promise.all(replies)).map((r) => r.status);
  assert.deepEqual(
    await statuses([
      api.get(`/api/v1/endpoints/${endpoint.id}`),
      api.get(`/api/v1/endpoints/${endpoint.id}?x=1`),
      api.get('/api/v1/endpoints/ep_0000000000nosuchendpoint00'),
      api.get('/nothing/here'),
      api.get('/nothing/else?token=abc'),
      api.get('/api/v1/nothing'),
    ]),
    [200, 200, 404, 404, 404, 404],
  );
  const metrics = await scrape(service.url);
  const route = '/api/v1/endpoints/:id';
  assert.equal(metrics.value('herald_http_requests_total', { route, status: '200' }), 2);
  assert.equal(metrics.value('herald_http_requests_total', { route, status: '404' }), 1);
  assert.equal(metrics.value('herald_http_request_duration_seconds_count', { route }), 3);
  assert.ok(metrics.value('herald_http_request_duration_seconds_sum', { route }) > 0);
  assert.equal(metrics.value('herald_http_requests_total', { route: 'unmatched', status: '404' }), 3);
  assert.equal(metrics.value('herald_http_requests_total', { route: '/api/v1/endpoints', status: '201' }), 1);
  const routes = new Set(metrics.samples.map((s) => s.labels.route).filter((r) => r !== undefined));
  for (const label of routes) assert.ok(label === 'unmatched' || label.startsWith('/'), `route label ${label}`);
  for (const label of routes)
    assert.ok(!/nothing|ep_|\?/.test(label), `route label ${label} carries a URL, not a route pattern`);
});

test('messages created are counted per environment; an idempotent repeat and a refused emit are not', {
  timeout: 60_000,
}, async (t) => {
  const service = await startTestService({ HERALD_ROLE: 'api' });
  t.after(() => service.stop());
  const { test: api, live } = await bootstrap(service.url);
  const app = await createApp(api);
  const liveApp = await createApp(live);
  await emit(api, app.id);
  await emit(api, app.id, 'invoice.paid', { n: 2 });
  await emit(api, app.id, 'invoice.paid', { n: 3 }, { 'idempotency-key': 'once' });
  const repeat = await api.post(
    '/api/v1/messages',
    { app_id: app.id, event_type: 'invoice.paid', payload: { n: 3 } },
    { 'idempotency-key': 'once' },
  );
  assert.equal(repeat.status, 200);
  assert.equal(repeat.body.idempotent, true);
  const refused = await api.post('/api/v1/messages', { app_id: app.id, event_type: 'no.such.type', payload: {} });
  assert.equal(refused.status, 400);
  const sample = await api.post('/api/v1/messages/send-test', { app_id: app.id });
  assert.equal(sample.status, 202, JSON.stringify(sample.body));
  await emit(live, liveApp.id);
  const metrics = await scrape(service.url);
  assert.equal(metrics.value('herald_messages_emitted_total', { livemode: 'false' }), 4);
  assert.equal(metrics.value('herald_messages_emitted_total', { livemode: 'true' }), 1);
});

test('queue and endpoint gauges are read from the store, at most every 5 s', { timeout: 60_000 }, async (t) => {
  // No worker in this process: what is emitted stays due.
  const service = await startTestService({ HERALD_ROLE: 'api' });
  t.after(() => service.stop());
  const { test: api } = await bootstrap(service.url);
  const app = await createApp(api);
  const endpoints = [];
  for (let i = 0; i < 3; i++) endpoints.push(await createEndpoint(api, app.id));
  const disabled = await api.patch(`/api/v1/endpoints/${endpoints[2].id}`, { status: 'disabled' });
  assert.equal(disabled.status, 200);

  // A disabled endpoint gets a `disabled` delivery and no attempt: two attempts queued per message.
  const firstEmit = Date.now();
  for (let i = 0; i < 4; i++) assert.equal((await emit(api, app.id, 'invoice.paid', { i })).delivery_ids.length, 3);
  let queued = 8;
  await new Promise((resolve) => setTimeout(resolve, 300));
  const read = Date.now();
  const metrics = await scrape(service.url);
  assert.equal(metrics.value('herald_queue_due_attempts'), queued);
  const age = metrics.value('herald_queue_oldest_due_age_seconds');
  assert.ok(age >= 0.25 && age <= (Date.now() - firstEmit) / 1000 + 0.05, `oldest due age ${age}`);
  assert.equal(metrics.value('herald_endpoints', { status: 'active' }), 2);
  assert.equal(metrics.value('herald_endpoints', { status: 'disabled' }), 1);
  assert.equal(metrics.value('herald_endpoints', { status: 'failing' }), 0);

  // Within 5 s of that read a scrape serves it again; after, it reads the store again.
  await emit(api, app.id, 'invoice.paid', { i: 4 });
  queued += 2;
  assert.equal((await api.patch(`/api/v1/endpoints/${endpoints[2].id}`, { status: 'active' })).status, 200);
  const cached = await scrape(service.url);
  const within = Date.now() - read < 4_500;
  if (within) {
    assert.equal(cached.value('herald_queue_due_attempts'), 8, 'read again within 5 s');
    assert.equal(cached.value('herald_endpoints', { status: 'disabled' }), 1);
  }
  let fresh = cached;
  const deadline = Date.now() + 15_000;
  while (fresh.value('herald_queue_due_attempts') !== queued && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    fresh = await scrape(service.url);
  }
  assert.equal(fresh.value('herald_queue_due_attempts'), 10);
  if (within) assert.ok(Date.now() - read >= 5_000, 'read again sooner than 5 s after the last read');
  assert.equal(fresh.value('herald_endpoints', { status: 'active' }), 3);
  assert.equal(fresh.value('herald_endpoints', { status: 'disabled' }), 0);
  assert.ok(fresh.value('herald_queue_oldest_due_age_seconds') >= age + 4);
});
