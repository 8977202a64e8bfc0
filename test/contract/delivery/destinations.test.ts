import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resealedUnderNewKey, setup, type Setup } from '../../support/delivery.js';
import {
  brokerGate,
  mqttConsumer,
  natsConsumer,
  RABBITMQ_URL,
  rabbitConsumer,
  REDIS_HOST,
  redisConsumer,
  verified,
} from '../../support/brokers.js';
import { Redis } from 'ioredis';
import { scrape } from '../../support/scrape.js';

// Destinations beyond HTTP against the brokers running on this machine: each type publishes the signed
// bytes an HTTP receiver would get, a consumer of our own reads them and the standardwebhooks verifier
// accepts them; the broker's acknowledgement is the attempt's answer; a broker that is down, refuses the
// credentials or refuses the message gives failed attempts, retried on the schedule until it takes them.

const RETRIES = { HERALD_RETRY_SCHEDULE: '0s,300ms,600ms,1s,1s,1s,1s,1s,1s,1s' };

/** The delivery of `message` to the endpoint `endpointId`. */
async function deliveryTo(s: Setup, message: { deliveryIds: string[] }, endpointId: string): Promise<string> {
  const reads = await Promise.all(message.deliveryIds.map((id) => s.delivery(id)));
  const found = reads.find((d) => d.endpoint_id === endpointId);
  if (!found) throw new Error(`no delivery to ${endpointId}`);
  return found.id;
}

async function emitted(s: Setup, payload: Record<string, unknown>) {
  const message = await s.emit(payload);
  const delivery = await s.until(message.deliveryIds[0]!, (d) => d.status === 'success', 'delivered');
  return { message, delivery };
}

test('rabbitmq: a persistent, confirmed message with message_id, type and the signature headers', async (t) => {
  const s = await setup(t, RETRIES);
  const consumer = await rabbitConsumer(t);
  const endpoint = await s.endpoint(consumer.url, { type: 'rabbitmq', config: consumer.config });
  const { message, delivery } = await emitted(s, { amount: 42, note: 'héllo' });
  const [arrived] = await consumer.waitFor(1);
  assert.deepEqual(verified(arrived!, endpoint.secret), {
    type: 'invoice.paid',
    timestamp: (await s.api.get(`/api/v1/messages/${message.id}`)).body.created_at,
    data: { amount: 42, note: 'héllo' },
  });
  assert.equal(arrived!.meta.messageId, message.id);
  assert.equal(arrived!.meta.type, 'invoice.paid');
  assert.equal(arrived!.meta.deliveryMode, 2, 'persistent');
  assert.equal(arrived!.headers['webhook-id'], message.id);
  const attempt = delivery.attempts[0]!;
  assert.equal(attempt.response_status, null);
  // The attempt shows the headers that travelled: no HTTP content type or user agent.
  assert.equal(attempt.request_headers!['webhook-id'], message.id);
  assert.equal(attempt.request_headers!['content-type'], undefined);
  assert.equal(attempt.request_headers!['user-agent'], undefined);
  assert.match(attempt.response_body!, new RegExp(`^rabbitmq: confirmed .*routing key "${consumer.queue}"`));

  // The password reads back redacted, is sealed at rest, and a URL written back with "<redacted>" keeps it.
  const read = await s.api.get(`/api/v1/endpoints/${endpoint.id}`);
  assert.equal(read.body.type, 'rabbitmq');
  assert.equal(read.body.url, 'amqp://guest:<redacted>@127.0.0.1:5672');
  assert.deepEqual(read.body.config, { exchange: '', routing_key: consumer.queue });
  const [row] = await s.service.store.ctx.db
    .selectFrom('endpoints')
    .selectAll()
    .where('id', '=', endpoint.id)
    .execute();
  assert.ok(!JSON.stringify(row).includes('guest:guest'), 'the password is not stored in the clear');
  const patched = await s.api.patch(`/api/v1/endpoints/${endpoint.id}`, {
    url: read.body.url,
    config: { routing_key: consumer.queue },
  });
  assert.equal(patched.status, 200, JSON.stringify(patched.body));
  await emitted(s, { n: 2 });
  await consumer.waitFor(2);
});

test('rabbitmq: a broker that is down, then back; wrong credentials, then right ones', async (t) => {
  const s = await setup(t, RETRIES);
  const consumer = await rabbitConsumer(t);
  const gate = await brokerGate(t, '127.0.0.1:5672');
  const endpoint = await s.endpoint(`amqp://guest:guest@127.0.0.1:${gate.port}`, {
    type: 'rabbitmq',
    config: consumer.config,
  });
  const message = await s.emit({ n: 1 });
  const id = message.deliveryIds[0]!;
  const failed = await s.until(id, (d) => d.attempts.length >= 1, 'a failed attempt');
  assert.equal(failed.attempts[0]!.status, 'failed');
  assert.equal(failed.attempts[0]!.error, 'rabbitmq: connection refused');
  await gate.open();
  const delivered = await s.until(id, (d) => d.status === 'success', 'delivered once the broker is back');
  assert.ok(delivered.attempts.length >= 2);
  verified((await consumer.waitFor(1))[0]!, endpoint.secret);

  // Wrong password: refused by the broker, the error names no password; the right one delivers.
  const wrong = await s.endpoint('amqp://guest:not-the-password@127.0.0.1:5672', {
    type: 'rabbitmq',
    config: consumer.config,
  });
  const wrongId = await deliveryTo(s, await s.emit({ n: 2 }), wrong.id);
  const refused = await s.until(wrongId, (d) => d.attempts.length >= 1, 'a refused attempt');
  assert.match(refused.attempts[0]!.error!, /^rabbitmq: .*ACCESS.REFUSED/i);
  assert.ok(!refused.attempts[0]!.error!.includes('not-the-password'));
  const fixed = await s.api.patch(`/api/v1/endpoints/${wrong.id}`, { url: RABBITMQ_URL });
  assert.equal(fixed.status, 200);
  await s.until(wrongId, (d) => d.status === 'success', 'delivered with the right password');
});

test('rabbitmq: a full queue that rejects publishes (nack) and an unroutable message are failed attempts', async (t) => {
  const s = await setup(t, RETRIES);
  const full = await rabbitConsumer(t, { 'x-max-length': 1, 'x-overflow': 'reject-publish' });
  await s.endpoint(full.url, { type: 'rabbitmq', config: full.config });
  const first = await s.emit({ n: 1 });
  await s.until(first.deliveryIds[0]!, (d) => d.status === 'success', 'the first fills the queue');
  const second = await s.emit({ n: 2 });
  const nacked = await s.until(second.deliveryIds[0]!, (d) => d.attempts.length >= 1, 'a nacked attempt');
  assert.match(nacked.attempts[0]!.error!, /^rabbitmq: the broker refused the message \(nack\)/);
  await full.waitFor(1); // consuming frees the queue
  await s.until(second.deliveryIds[0]!, (d) => d.status === 'success', 'taken once the queue has room');

  const other = await s.endpoint(full.url, { type: 'rabbitmq', config: { routing_key: 'no-such-queue-here' } });
  const unroutableId = await deliveryTo(s, await s.emit({ n: 3 }), other.id);
  const unroutable = await s.until(unroutableId, (d) => d.attempts.length >= 1, 'an unroutable attempt');
  assert.match(unroutable.attempts[0]!.error!, /^rabbitmq: unroutable: no queue is bound .*"no-such-queue-here"/);
});

test('nats: a JetStream publish with Nats-Msg-Id, answered by the PubAck; no stream and core NATS', async (t) => {
  const s = await setup(t, RETRIES);
  const consumer = await natsConsumer(t);
  const endpoint = await s.endpoint(consumer.url, { type: 'nats', config: consumer.config });
  const { message, delivery } = await emitted(s, { amount: 7 });
  const [arrived] = await consumer.waitFor(1);
  verified(arrived!, endpoint.secret);
  assert.equal(arrived!.headers['nats-msg-id'], message.id);
  assert.equal(arrived!.meta.subject, `${String(consumer.config.subject).replace('{event_type}', 'invoice.paid')}`);
  assert.equal(delivery.attempts[0]!.response_body, `nats: stream ${consumer.stream} sequence ${arrived!.meta.seq}`);

  // A repeat of the same message id (a manual retry) is dropped by the stream's duplicate window.
  const retried = await s.api.post(`/api/v1/deliveries/${delivery.id}/retry`);
  assert.equal(retried.status, 200);
  const again = await s.until(delivery.id, (d) => d.attempts.length >= 2, 'the retry recorded');
  const manual = again.attempts.find((a) => a.trigger === 'manual')!;
  assert.equal(
    manual.response_body,
    `nats: stream ${consumer.stream} sequence ${arrived!.meta.seq} (a repeat the stream dropped)`,
  );

  await s.api.delete(`/api/v1/endpoints/${endpoint.id}`);
  await s.endpoint(consumer.url, { type: 'nats', config: { subject: 'nobody_listens_here.{event_type}' } });
  const lost = await s.emit({ n: 2 });
  const refused = await s.until(lost.deliveryIds[0]!, (d) => d.attempts.length >= 1, 'a refused attempt');
  assert.match(refused.attempts[0]!.error!, /^nats: no stream listens on subject "nobody_listens_here.invoice.paid"/);

  const core = await s.endpoint(consumer.url, {
    type: 'nats',
    config: { ...consumer.config, jetstream: false },
  });
  const coreId = await deliveryTo(s, await s.emit({ n: 3 }), core.id);
  const coreDelivery = await s.until(coreId, (d) => d.status === 'success', 'core publish');
  assert.match(coreDelivery.attempts[0]!.response_body!, /core NATS: no acknowledgement/);
});

test('redis: XADD with id, type, body and the signature headers; the entry id is the answer; {app_uid}', async (t) => {
  const s = await setup(t, RETRIES);
  const consumer = await redisConsumer(t);
  const uid = `acme-${Date.now()}`;
  assert.equal((await s.api.patch(`/api/v1/applications/${s.appId}`, { uid })).status, 200);
  // The stream's name ends with the application's uid, filled in when the message is published.
  const endpoint = await s.endpoint(consumer.url, {
    type: 'redis',
    config: { stream: `${consumer.stream}:{app_uid}`, maxlen: 1000 },
  });
  const { message, delivery } = await emitted(s, { amount: 9 });
  const stream = `${consumer.stream}:${uid}`;
  const [host, port] = REDIS_HOST.split(':');
  const client = new Redis({ host, port: Number(port) });
  t.after(async () => {
    await client.del(stream);
    client.disconnect();
  });
  const entries = (await client.xrange(stream, '-', '+')) as [string, string[]][];
  assert.equal(entries.length, 1);
  const [entryId, fields] = entries[0]!;
  assert.deepEqual(fields.slice(0, 6), ['id', message.id, 'type', 'invoice.paid', 'body', fields[5]]);
  const values: Record<string, string> = {};
  for (let i = 6; i < fields.length; i += 2) values[fields[i]!] = fields[i + 1]!;
  verified({ body: fields[5]!, headers: values, meta: {} }, endpoint.secret);
  assert.equal(delivery.attempts[0]!.response_body, `redis: stream "${stream}" entry ${entryId}`);
});

test('mqtt: MQTT 5 with user properties, QoS 1 answered by PUBACK and QoS 2 by PUBCOMP', async (t) => {
  const s = await setup(t, RETRIES);
  const consumer = await mqttConsumer(t);
  const endpoint = await s.endpoint(consumer.url, { type: 'mqtt', config: consumer.config });
  const { delivery } = await emitted(s, { amount: 1 });
  const [arrived] = await consumer.waitFor(1);
  verified(arrived!, endpoint.secret);
  assert.equal(arrived!.meta.topic, `${consumer.prefix}/invoice.paid`);
  assert.equal((arrived!.meta.properties as { contentType?: string }).contentType, 'application/json');
  assert.equal(delivery.attempts[0]!.response_body, `mqtt: PUBACK on "${consumer.prefix}/invoice.paid"`);

  const patched = await s.api.patch(`/api/v1/endpoints/${endpoint.id}`, { config: { ...consumer.config, qos: 2 } });
  assert.equal(patched.status, 200);
  assert.equal(patched.body.config.qos, 2);
  const second = await emitted(s, { amount: 2 });
  await consumer.waitFor(2);
  assert.equal(second.delivery.attempts[0]!.response_body, `mqtt: PUBCOMP on "${consumer.prefix}/invoice.paid"`);
  // Metrics count a destination's attempts by its type, with no HTTP status class.
  const metrics = await scrape(s.service.url);
  assert.equal(
    metrics.value('herald_delivery_attempts_total', { outcome: 'success', status_class: 'none', type: 'mqtt' }),
    2,
  );
});

test('a destination that keeps failing goes failing, then disabled, like an HTTP endpoint', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s,200ms,400ms', HERALD_DISABLE_AFTER: '300ms' });
  // A closed port: every attempt fails, and counts toward the endpoint's health.
  const gate = await brokerGate(t, '127.0.0.1:6379');
  const endpoint = await s.endpoint(`redis://127.0.0.1:${gate.port}/0`, { type: 'redis' });
  const emitted = await s.emit();
  const d = await s.until(emitted.deliveryIds[0]!, (d) => d.status !== 'pending', 'delivery settled');
  assert.equal(d.status, 'failed');
  assert.equal(d.attempts.length, 3);
  assert.ok(d.attempts.every((a) => a.error === 'redis: connection refused'));
  assert.equal((await s.api.get(`/api/v1/endpoints/${endpoint.id}`)).body.status, 'disabled');
});

test('reseal seals a destination password and secret fields under a new master key', async (t) => {
  const s = await setup(t);
  const made = await s.endpoint('nats://herald:reseal-pw@127.0.0.1:4222', {
    type: 'nats',
    config: { token: 'reseal-token' },
  });
  const { resealed, row, opener } = await resealedUnderNewKey(s, made.id);
  assert.equal(resealed, 1);
  assert.deepEqual(opener.destinationSecrets(row), { password: 'reseal-pw', token: 'reseal-token' });
});
