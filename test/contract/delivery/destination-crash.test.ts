import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually } from '../../support/receiver.js';
import { child, database, emitMany } from '../../support/burst.js';
import { bootstrap } from '../../support/client.js';
import { rabbitConsumer } from '../../support/brokers.js';

// A worker SIGKILLed while it publishes to a broker loses nothing: every message the API acknowledged
// reaches the RabbitMQ queue after a restart (some twice, with the same message_id, as at-least-once allows).

test('SIGKILL mid-publish to RabbitMQ loses nothing: every acknowledged message arrives after a restart', async (t) => {
  const db = await database(t);
  const consumer = await rabbitConsumer(t);
  const env = {
    ...db.env,
    HERALD_LEASE: '2s',
    HERALD_ATTEMPT_TIMEOUT: '1s',
    HERALD_RETRY_SCHEDULE: '0s,300ms,1s,2s,5s',
  };
  const first = await child(t, env);
  const { test: api } = await bootstrap(first.url!);
  const app = await api.post('/api/v1/applications', { name: 'Crash' });
  // The rate limit spreads the publishes over a few seconds, so the kill lands mid-delivery.
  const endpoint = await api.post('/api/v1/endpoints', {
    app_id: app.body.id,
    type: 'rabbitmq',
    url: consumer.url,
    config: consumer.config,
    rate_limit: 60,
  });
  assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
  const accepted = await emitMany(api, app.body.id, 200, 8);
  assert.equal(accepted.length, 200);
  const arrived = () => new Set(consumer.arrived.map((m) => String(m.meta.messageId)));
  await consumer.waitFor(20, 30_000);
  first.process.kill('SIGKILL');
  assert.equal((await first.exited).signal, 'SIGKILL');
  const beforeKill = arrived().size;
  assert.ok(beforeKill < accepted.length, `the kill must land mid-delivery (${beforeKill} of ${accepted.length})`);

  await child(t, { ...env, PORT: new URL(first.url!).port });
  await eventually(
    async () => accepted.every((id) => arrived().has(id)),
    90_000,
    'every acknowledged message to reach the queue after the restart',
  );
  const repeats = consumer.arrived.length - arrived().size;
  console.log(
    `# SIGKILL mid-publish: ${accepted.length} acknowledged, ${beforeKill} before the kill, ${repeats} repeats`,
  );
});
