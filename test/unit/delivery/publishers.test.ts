import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type Socket } from 'node:net';
import { Publishers } from '../../../src/delivery/destinations/index.js';
import { checkedDestination, type Destination } from '../../../src/domain/destinations.js';
import { REDIS_HOST, redisConsumer } from '../../support/brokers.js';

// The destinations' connection pool (src/delivery/destinations/index.ts): one connection per way of
// connecting, reused by every publish, and each one it holds closed when the publishers close.

/** A TCP relay on loopback in front of the machine's Redis that counts the connections open through it. */
async function relay(t: TestContext): Promise<{ port: number; open: () => number }> {
  const [host, port] = REDIS_HOST.split(':');
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    sockets.add(client);
    const upstream = connect(Number(port), host);
    client.pipe(upstream).pipe(client);
    const end = () => {
      sockets.delete(client);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  return { port: (server.address() as { port: number }).port, open: () => sockets.size };
}

test('a connection is opened once per way of connecting, and every one is closed when the publishers close', async (t) => {
  const consumer = await redisConsumer(t);
  const relays = [await relay(t), await relay(t)];
  const publishers = new Publishers({ attemptTimeoutMs: 5_000, ssrfAllow: [], kafkaIdempotent: true });
  t.after(() => publishers.close());
  const publish = async (port: number, n: number) => {
    const url = `redis://127.0.0.1:${port}/0`;
    const checked = checkedDestination('redis', url, consumer.config, null);
    if (typeof checked === 'string') throw new Error(checked);
    const destination: Destination = { type: 'redis', appId: 'app_pool', ...checked, url };
    const id = `msg_pool${n}`;
    const result = await publishers.publish(
      destination,
      { url, body: `{"n":${n}}`, publicOnly: false, headers: { 'webhook-id': id } },
      {
        id,
        eventType: 'pool.checked',
        values: { event_type: 'pool.checked', app_id: 'app_pool', app_uid: '', endpoint_id: 'ep_pool', message_id: id },
      },
    );
    assert.ok(result.ok, JSON.stringify(result));
  };
  // Two publishes through each relay: the second reuses the first's connection.
  for (const [n, r] of [relays[0]!, relays[1]!, relays[0]!, relays[1]!].entries()) await publish(r.port, n);
  assert.equal((await consumer.waitFor(4)).length, 4);
  assert.deepEqual(
    relays.map((r) => r.open()),
    [1, 1],
  );
  await publishers.close();
  for (let waited = 0; relays.some((r) => r.open() > 0) && waited < 2_000; waited += 20)
    await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(
    relays.map((r) => r.open()),
    [0, 0],
    'every pooled connection is closed',
  );
});
