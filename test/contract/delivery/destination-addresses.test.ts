import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { setup } from '../../support/delivery.js';
import { checkedDestination, type DestinationType } from '../../../src/domain/destinations.js';

// A destination's hosts are judged again when it connects: names by the addresses their lookup returns,
// literals as they are, and for Kafka every broker its client connects to. Under HERALD_TEST_NETWORK=public
// destinations whose rows reach loopback only when they connect (written in the store, or a name's DNS
// answer) get no connection: their attempts fail with the guard's error.

test('under HERALD_TEST_NETWORK=public a destination on loopback is never connected to, whatever its type', async (t) => {
  const s = await setup(t, { HERALD_TEST_NETWORK: 'public', HERALD_ATTEMPT_TIMEOUT: '3s' });
  const server = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  let connections = 0;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  const port = (server.address() as AddressInfo).port;
  const aws = {
    region: 'us-east-1',
    access_key_id: 'a',
    secret_access_key: 's',
    endpoint_url: `http://localhost:${port}`,
  };
  const destinations: [DestinationType, string, Record<string, unknown>][] = [
    ['rabbitmq', `amqp://guest:guest@localhost:${port}`, {}],
    ['redis', `redis://127.0.0.1:${port}/0`, {}],
    ['nats', `nats://localhost:${port}`, {}],
    ['mqtt', `mqtt://127.0.0.1:${port}`, {}],
    ['kafka', `kafka://127.0.0.1:${port}`, { topic: 'orders' }],
    ['kafka', `kafka://localhost:${port}`, { topic: 'orders' }],
    ['sqs', `http://localhost:${port}/000000000000/q`, aws],
    ['s3', 's3://bucket', aws],
  ];
  const scope = { orgId: s.orgId, livemode: false };
  for (const [type, url, config] of destinations) {
    const checked = checkedDestination(type, url, config, null);
    assert.notEqual(typeof checked, 'string', String(checked));
    await s.service.store.endpoints.create(scope, {
      appId: s.appId,
      url,
      destination: { type, checked: checked as Exclude<typeof checked, string> },
    });
  }
  const emitted = await s.emit();
  assert.equal(emitted.deliveryIds.length, destinations.length);
  for (const id of emitted.deliveryIds) {
    const d = await s.until(id, (read) => read.status !== 'pending', 'a failed delivery', 30_000);
    assert.equal(d.status, 'failed');
    for (const attempt of d.attempts)
      assert.match(attempt.error!, /refused to connect.*non-public/, JSON.stringify(attempt));
  }
  assert.equal(connections, 0, 'nothing connected to the loopback port');
});
