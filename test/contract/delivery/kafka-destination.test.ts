import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup } from '../../support/delivery.js';
import { kafkaMock, verified } from '../../support/brokers.js';

// Kafka destinations against librdkafka's mock cluster (Debian's kcat, three brokers): a record with the
// key template's value and the signature headers, acknowledged by every in-sync replica, the partition and
// offset as the answer; a cluster that is gone gives failed attempts. The mock names no controller broker
// in its metadata, which kafkajs's idempotent producer needs for its producer id, so these tests publish
// with HERALD_KAFKA_IDEMPOTENT=false; docs/destinations.md says so.

const ENV = {
  HERALD_RETRY_SCHEDULE: '0s,300ms,600ms,1s,1s,1s',
  HERALD_KAFKA_IDEMPOTENT: 'false',
  HERALD_ATTEMPT_TIMEOUT: '5s',
};

test('kafka: a record the verifier accepts, keyed by the template, answered with its partition and offset', async (t) => {
  const s = await setup(t, ENV);
  const cluster = await kafkaMock(t);
  const endpoint = await s.endpoint(cluster.url, {
    type: 'kafka',
    config: { topic: cluster.topic, key: '{app_id}:{event_type}' },
  });
  const message = await s.emit({ amount: 5 });
  const delivery = await s.until(message.deliveryIds[0]!, (d) => d.status === 'success', 'delivered');
  const [arrived] = await cluster.waitFor(1);
  verified(arrived!, endpoint.secret);
  assert.equal(arrived!.headers['webhook-id'], message.id);
  assert.equal(arrived!.meta.key, `${s.appId}:invoice.paid`);
  assert.equal(
    delivery.attempts[0]!.response_body,
    `kafka: partition ${arrived!.meta.partition} offset ${arrived!.meta.offset}`,
  );
  assert.equal(delivery.attempts[0]!.response_status, null);
});

test('kafka: brokers that are not there give failed attempts naming kafka', async (t) => {
  const s = await setup(t, ENV);
  const cluster = await kafkaMock(t);
  // A port nothing listens on: the cluster is down.
  const gone = await s.endpoint('kafka://127.0.0.1:1', { type: 'kafka', config: { topic: cluster.topic } });
  const message = await s.emit({ n: 1 });
  const failed = await s.until(message.deliveryIds[0]!, (d) => d.attempts.length >= 1, 'a failed attempt');
  assert.equal(failed.attempts[0]!.status, 'failed');
  assert.match(failed.attempts[0]!.error!, /^kafka: /);
  // Pointed at the cluster, the same delivery goes on its next retry.
  const moved = await s.api.patch(`/api/v1/endpoints/${gone.id}`, { url: cluster.url });
  assert.equal(moved.status, 200);
  await s.until(message.deliveryIds[0]!, (d) => d.status === 'success', 'delivered once the brokers are there');
  verified((await cluster.waitFor(1))[0]!, gone.secret);
});
