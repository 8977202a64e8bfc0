import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closedPort, setup, startReceiver } from '../../support/delivery.js';
import { scrape } from '../../support/scrape.js';

// What the delivery worker counts (role `all`, in this process): every attempt by outcome and status
// class, its duration, and the latency from message to delivery, exact once deliveries have settled.

const MESSAGES = 12;
const FAILING = 4;

test('attempt counters and histograms are exact: N messages to a receiver that fails a known share', {
  timeout: 90_000,
}, async (t) => {
  // Two attempts per delivery: a failing one is tried twice.
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s,100ms' });
  const receiver = await startReceiver(t, (request) =>
    JSON.parse(request.body).data.fail ? { status: 503, body: 'down' } : { status: 200, body: 'ok' },
  );
  await s.endpoint(receiver.url);
  // A second endpoint nobody listens on: every attempt fails without an answer (status class `error`).
  await s.endpoint(`http://127.0.0.1:${await closedPort()}/hook`);
  const before = await scrape(s.service.url);
  assert.equal(before.sum('herald_delivery_attempts_total'), 0);

  const started = Date.now();
  const deliveries: string[] = [];
  for (let i = 0; i < MESSAGES; i++) deliveries.push(...(await s.emit({ i, fail: i < FAILING })).deliveryIds);
  assert.equal(deliveries.length, MESSAGES * 2);
  for (const id of deliveries)
    await s.until(id, (d) => d.status === 'success' || d.status === 'failed', `delivery ${id} settled`, 30_000);
  const elapsed = (Date.now() - started) / 1000;

  const metrics = await scrape(s.service.url);
  const attempts = (outcome: string, status_class: string) =>
    metrics.value('herald_delivery_attempts_total', { outcome, status_class });
  const delivered = MESSAGES - FAILING;
  assert.equal(attempts('success', '2xx'), delivered);
  assert.equal(attempts('failure', '5xx'), FAILING * 2);
  assert.equal(attempts('failure', 'error'), MESSAGES * 2);
  const total = delivered + FAILING * 2 + MESSAGES * 2;
  assert.equal(metrics.sum('herald_delivery_attempts_total'), total);
  assert.equal(metrics.value('herald_delivery_attempt_duration_seconds_count'), total);
  assert.equal(metrics.value('herald_delivery_attempt_duration_seconds_bucket', { le: '+Inf' }), total);
  assert.ok(metrics.value('herald_delivery_attempt_duration_seconds_sum') > 0);
  // One latency per delivered message, each no longer than the test took.
  assert.equal(metrics.value('herald_delivery_latency_seconds_count'), delivered);
  const latency = metrics.value('herald_delivery_latency_seconds_sum');
  assert.ok(latency > 0 && latency <= delivered * elapsed, `latency sum ${latency}`);
  assert.equal(metrics.value('herald_delivery_latency_seconds_bucket', { le: '86400' }), delivered);
  assert.equal(metrics.value('herald_messages_emitted_total', { livemode: 'false' }), MESSAGES);
  assert.equal(receiver.received.length, delivered + FAILING * 2, 'attempts the receiver saw');

  // Settled: nothing is due any more.
  await new Promise((resolve) => setTimeout(resolve, 5_100));
  const settled = await scrape(s.service.url);
  assert.equal(settled.value('herald_queue_due_attempts'), 0);
  assert.equal(settled.value('herald_queue_oldest_due_age_seconds'), 0);
  // Endpoints per status as the store has them: the dead endpoint is failing; the receiver's is active
  // or failing by the order its last outcomes were recorded in (a retry of a failed message can be last).
  const listed = (await s.api.get('/api/v1/endpoints')).body.data as { status: string }[];
  assert.equal(listed.length, 2);
  for (const status of ['active', 'failing', 'disabled'])
    assert.equal(
      settled.value('herald_endpoints', { status }),
      listed.filter((endpoint) => endpoint.status === status).length,
      `endpoints ${status}`,
    );
  assert.ok(settled.value('herald_endpoints', { status: 'failing' }) >= 1, 'the dead endpoint is failing');
});
