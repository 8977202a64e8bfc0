import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { createTestDatabase, startTestService } from '../../support/service.js';
import { bootstrap } from '../../support/client.js';
import { eventually, Receiver } from '../../support/receiver.js';
import { freePort } from '../../support/child.js';
import { type HeraldProcess, startHerald, stopAll } from '../../support/processes.js';
import { parseMetrics, scrape } from '../../support/scrape.js';

// Metrics per process when the roles run apart: an API process counts what it answers and creates, a
// worker process (no HTTP API) serves the attempts it made on HERALD_METRICS_PORT. Both on one store;
// the file runs once per store, as every file under test/contract/ does.

const TOKEN = 'metrics-token-0123456789abcdef';
const MESSAGES = 10;
const FAILING = 3;

test('a worker process serves its own metrics on HERALD_METRICS_PORT; the API process serves its own', {
  timeout: 180_000,
}, async (t) => {
  const database = await createTestDatabase();
  const receiver = await new Receiver().start();
  receiver.respond = (request) => (JSON.parse(request.body).data.fail ? { status: 500 } : { status: 204 });
  const processes: HeraldProcess[] = [];
  t.after(async () => {
    await stopAll(processes);
    await receiver.stop();
    await database.drop();
  });
  const [workerPort, apiPort] = [await freePort(), await freePort()];
  const common = { ...database.env, HERALD_METRICS_TOKEN: TOKEN, HERALD_RETRY_SCHEDULE: '0s,100ms' };
  // The API process is given a metrics port too: it serves its metrics on the API, not there.
  const api = await startHerald('api', { ...common, HERALD_METRICS_PORT: String(apiPort) });
  processes.push(api);
  const worker = await startHerald('worker', { ...common, HERALD_METRICS_PORT: String(workerPort) });
  processes.push(worker);
  assert.match(worker.output(), new RegExp(`metrics at http://127\\.0\\.0\\.1:${workerPort}/metrics`));
  const workerUrl = `http://127.0.0.1:${workerPort}`;

  // The worker's port: /metrics only, and only with the token.
  const anonymous = await fetch(`${workerUrl}/metrics`);
  assert.equal(anonymous.status, 401);
  assert.equal(anonymous.headers.get('www-authenticate'), 'Bearer');
  assert.equal((await fetch(`${workerUrl}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status, 401);
  assert.equal((await fetch(`${workerUrl}/other`, { headers: { authorization: `Bearer ${TOKEN}` } })).status, 404);
  await assert.rejects(
    fetch(`http://127.0.0.1:${apiPort}/metrics`),
    'an API process serves nothing on the metrics port',
  );

  const { test: client } = await bootstrap(api.url);
  const app = (await client.post('/api/v1/applications', { name: 'Split' })).body;
  assert.equal((await client.post('/api/v1/endpoints', { app_id: app.id, url: receiver.url })).status, 201);
  const deliveries: string[] = [];
  for (let i = 0; i < MESSAGES; i++) {
    const reply = await client.post('/api/v1/messages', {
      app_id: app.id,
      event_type: 'invoice.paid',
      payload: { i, fail: i < FAILING },
    });
    assert.equal(reply.status, 201, JSON.stringify(reply.body));
    deliveries.push(...reply.body.delivery_ids);
  }
  for (const id of deliveries)
    await eventually(
      async () => ['success', 'failed'].includes((await client.get(`/api/v1/deliveries/${id}`)).body.status),
      60_000,
      `delivery ${id} settled`,
    );

  const fromWorker = await scrape(workerUrl, TOKEN);
  const delivered = MESSAGES - FAILING;
  assert.equal(
    fromWorker.value('herald_delivery_attempts_total', { outcome: 'success', status_class: '2xx' }),
    delivered,
  );
  assert.equal(
    fromWorker.value('herald_delivery_attempts_total', { outcome: 'failure', status_class: '5xx' }),
    FAILING * 2,
  );
  assert.equal(fromWorker.value('herald_delivery_attempt_duration_seconds_count'), delivered + FAILING * 2);
  assert.equal(fromWorker.value('herald_delivery_latency_seconds_count'), delivered);
  assert.equal(fromWorker.sum('herald_messages_emitted_total'), 0, 'the worker created no message');
  assert.equal(fromWorker.sum('herald_http_requests_total'), 0, 'the worker answers no API request');
  assert.ok(fromWorker.value('process_resident_memory_bytes') > 0);
  // The store-read gauges are the store's, whichever process reads them.
  assert.equal(fromWorker.sum('herald_endpoints'), 1);
  assert.equal(fromWorker.value('herald_queue_due_attempts'), 0);

  const fromApi = await scrape(api.url, TOKEN);
  assert.equal(fromApi.value('herald_messages_emitted_total', { livemode: 'false' }), MESSAGES);
  assert.equal(fromApi.sum('herald_delivery_attempts_total'), 0, 'the API process made no attempt');
  assert.equal(fromApi.value('herald_http_requests_total', { route: '/api/v1/messages', status: '201' }), MESSAGES);
  assert.equal(fromApi.sum('herald_endpoints'), 1);
});

test('worker role in this process: metrics on a free port when HERALD_METRICS_PORT=0, none when unset; a port in use stops start-up', {
  timeout: 60_000,
}, async (t) => {
  const served = await startTestService({ HERALD_ROLE: 'worker', HERALD_METRICS_PORT: '0' });
  t.after(() => served.stop());
  assert.equal(served.url, '');
  assert.match(served.metricsUrl ?? '', /^http:\/\/127\.0\.0\.1:\d+$/);
  const metrics = await scrape(served.metricsUrl!);
  assert.equal(metrics.types.get('herald_delivery_attempts_total'), 'counter');

  const quiet = await startTestService({ HERALD_ROLE: 'worker' });
  t.after(() => quiet.stop());
  assert.equal(quiet.metricsUrl, null);

  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => taken.close(() => resolve())));
  const port = (taken.address() as { port: number }).port;
  await assert.rejects(
    startTestService({ HERALD_ROLE: 'worker', HERALD_METRICS_PORT: String(port) }),
    (error: Error) => {
      assert.match(error.message, new RegExp(`cannot serve metrics on 127\\.0\\.0\\.1:${port} .*the port is in use`));
      return true;
    },
  );
});

test('the text format parses line by line', () => {
  const parsed = parseMetrics('# TYPE a counter\na{x="1",y="q\\"z"} 2\nb NaN\nc +Inf\n');
  assert.equal(parsed.value('a', { y: 'q"z' }), 2);
  assert.equal(parsed.types.get('a'), 'counter');
});
