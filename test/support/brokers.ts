import { spawn } from 'node:child_process';
import { createServer, connect as tcpConnect, type AddressInfo, type Server, type Socket } from 'node:net';
import type { TestContext } from 'node:test';
import { connect as amqpConnect } from 'amqplib';
import { connect as natsConnect, type JsMsg } from 'nats';
import { Redis } from 'ioredis';
import { connectAsync as mqttConnect } from 'mqtt';
import { Webhook } from 'standardwebhooks';
import { randomToken } from '../../src/domain/ids.js';

// Consumers of the project's own for the destination tests: each reads what Herald published to a real
// broker on this machine (RabbitMQ, NATS JetStream, Redis, Mosquitto), with the body and the headers as
// they arrived, so a test can verify the signature with the standardwebhooks verifier.

export const RABBITMQ_URL = process.env.SUITE_RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
export const NATS_HOST = process.env.SUITE_NATS_HOST ?? '127.0.0.1:4222';
export const REDIS_HOST = process.env.SUITE_REDIS_HOST ?? '127.0.0.1:6379';
export const MQTT_HOST = process.env.SUITE_MQTT_HOST ?? '127.0.0.1:1883';

/** A message as a consumer read it. */
export interface Arrived {
  body: string;
  headers: Record<string, string>;
  /** What the protocol carries beside the headers (AMQP properties, the subject or topic, the stream). */
  meta: Record<string, unknown>;
}

export interface Consumer {
  /** What a destination of this consumer's broker is created with. */
  url: string;
  config: Record<string, unknown>;
  arrived: Arrived[];
  waitFor(n: number, timeoutMs?: number): Promise<Arrived[]>;
}

const name = (prefix: string) => `${prefix}${randomToken(10).toLowerCase()}`;

async function waitUntil(arrived: Arrived[], n: number, timeoutMs: number): Promise<Arrived[]> {
  const until = Date.now() + timeoutMs;
  while (arrived.length < n) {
    if (Date.now() > until) throw new Error(`expected ${n} messages, ${arrived.length} arrived`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return arrived;
}

/** A RabbitMQ queue of its own; messages reach it through the default exchange by its name. */
export async function rabbitConsumer(
  t: TestContext,
  queueArgs: Record<string, unknown> = {},
): Promise<Consumer & { queue: string; purge(): Promise<void> }> {
  const connection = await amqpConnect(RABBITMQ_URL);
  const channel = await connection.createChannel();
  const queue = name('herald-test-');
  await channel.assertQueue(queue, { exclusive: false, autoDelete: false, durable: false, arguments: queueArgs });
  const arrived: Arrived[] = [];
  let consuming = false;
  t.after(async () => {
    await channel.deleteQueue(queue).catch(() => {});
    await connection.close().catch(() => {});
  });
  const consumer = {
    url: RABBITMQ_URL,
    queue,
    config: { exchange: '', routing_key: queue },
    arrived,
    async waitFor(n: number, timeoutMs = 15_000) {
      if (!consuming) {
        consuming = true;
        await channel.consume(queue, (message) => {
          if (!message) return;
          const headers: Record<string, string> = {};
          for (const [k, v] of Object.entries(message.properties.headers ?? {})) headers[k] = String(v);
          arrived.push({ body: message.content.toString(), headers, meta: { ...message.properties } });
          channel.ack(message);
        });
      }
      return waitUntil(arrived, n, timeoutMs);
    },
    async purge() {
      await channel.purgeQueue(queue);
    },
  };
  return consumer;
}

/** A JetStream stream of its own on subjects `<prefix>.>`; its messages are read back from the stream. */
export async function natsConsumer(t: TestContext): Promise<Consumer & { stream: string }> {
  const nc = await natsConnect({ servers: NATS_HOST });
  const prefix = name('herald_test_');
  const stream = prefix.toUpperCase();
  const jsm = await nc.jetstreamManager();
  await jsm.streams.add({ name: stream, subjects: [`${prefix}.>`] });
  const arrived: Arrived[] = [];
  const js = nc.jetstream();
  const consumer = await js.consumers.get(stream);
  let messages: Awaited<ReturnType<typeof consumer.consume>> | null = null;
  t.after(async () => {
    // Stopped before the connection closes: a consumer left reading retries on a closed connection for ever.
    await messages?.close().catch(() => {});
    await jsm.streams.delete(stream).catch(() => {});
    await nc.close().catch(() => {});
  });
  let reading = false;
  return {
    url: `nats://${NATS_HOST}`,
    stream,
    config: { subject: `${prefix}.{event_type}` },
    arrived,
    async waitFor(n: number, timeoutMs = 15_000) {
      if (!reading) {
        reading = true;
        void (async () => {
          messages = await consumer.consume();
          for await (const m of messages as AsyncIterable<JsMsg>) {
            const headers: Record<string, string> = {};
            for (const key of m.headers?.keys() ?? []) headers[key.toLowerCase()] = m.headers!.get(key);
            arrived.push({ body: m.string(), headers, meta: { subject: m.subject, seq: m.seq } });
            m.ack();
          }
        })().catch(() => {});
      }
      return waitUntil(arrived, n, timeoutMs);
    },
  };
}

/** A Redis stream of its own, read with XRANGE. */
export async function redisConsumer(t: TestContext): Promise<Consumer & { stream: string }> {
  const [host, port] = REDIS_HOST.split(':');
  const client = new Redis({ host, port: Number(port) });
  const stream = name('herald-test-');
  t.after(async () => {
    await client.del(stream).catch(() => {});
    client.disconnect();
  });
  const arrived: Arrived[] = [];
  return {
    url: `redis://${REDIS_HOST}/0`,
    stream,
    config: { stream },
    arrived,
    async waitFor(n: number, timeoutMs = 15_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const entries = (await client.xrange(stream, '-', '+')) as [string, string[]][];
        arrived.length = 0;
        for (const [id, fields] of entries) {
          const values: Record<string, string> = {};
          for (let i = 0; i < fields.length; i += 2) values[fields[i]!] = fields[i + 1]!;
          const { id: webhookId, type, body, ...headers } = values;
          arrived.push({ body: body!, headers, meta: { entry: id, id: webhookId, type, fields } });
        }
        if (arrived.length >= n) return arrived;
        if (Date.now() > until) throw new Error(`expected ${n} entries, ${arrived.length} in ${stream}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
}

/** An MQTT 5 subscriber on topics `<prefix>/#`. */
export async function mqttConsumer(t: TestContext): Promise<Consumer & { prefix: string }> {
  const client = await mqttConnect(`mqtt://${MQTT_HOST}`, { protocolVersion: 5, clientId: name('herald-sub-') });
  const prefix = name('herald-test-');
  const arrived: Arrived[] = [];
  client.on('message', (topic, payload, packet) => {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(packet.properties?.userProperties ?? {})) headers[k] = String(v);
    arrived.push({
      body: payload.toString(),
      headers,
      meta: { topic, qos: packet.qos, properties: packet.properties },
    });
  });
  await client.subscribeAsync(`${prefix}/#`, { qos: 1 });
  t.after(() => client.endAsync(true).catch(() => {}));
  return {
    url: `mqtt://${MQTT_HOST}`,
    prefix,
    config: { topic: `${prefix}/{event_type}` },
    arrived,
    waitFor: (n, timeoutMs = 15_000) => waitUntil(arrived, n, timeoutMs),
  };
}

/** Verifies a published message with the standardwebhooks library; returns the parsed body. */
export function verified(arrived: Arrived, secret: string): unknown {
  return new Webhook(secret).verify(arrived.body, {
    'webhook-id': arrived.headers['webhook-id']!,
    'webhook-timestamp': arrived.headers['webhook-timestamp']!,
    'webhook-signature': arrived.headers['webhook-signature']!,
  });
}

/**
 * A TCP forwarder on a loopback port of its own to a broker: closed (nothing listens) until `open()`, so a
 * destination pointed at it sees a broker that is down, then one that is back.
 */
export async function brokerGate(t: TestContext, target: string): Promise<{ port: number; open(): Promise<void> }> {
  // A port that was free: taken, noted, and given back.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  let server: Server | null = null;
  const sockets = new Set<Socket>();
  t.after(async () => {
    for (const s of sockets) s.destroy();
    if (server) await new Promise((resolve) => server!.close(resolve));
  });
  const [host, targetPort] = target.split(':');
  return {
    port,
    async open() {
      server = createServer((socket) => {
        const upstream = tcpConnect(Number(targetPort), host);
        sockets.add(socket).add(upstream);
        socket.pipe(upstream).pipe(socket);
        socket.on('error', () => upstream.destroy());
        upstream.on('error', () => socket.destroy());
      });
      await new Promise<void>((resolve) => server!.listen(port, '127.0.0.1', resolve));
    },
  };
}

/**
 * librdkafka's mock Kafka cluster (three brokers, in Debian's kcat), with kcat itself consuming `topic` from
 * the beginning as JSON lines: a protocol mock, not Kafka (docs/destinations.md says what it covers).
 */
export async function kafkaMock(t: TestContext): Promise<Consumer & { topic: string; brokers: string }> {
  const topic = name('herald-test-');
  const kcat = spawn(
    'kcat',
    [
      '-X',
      'test.mock.num.brokers=3',
      '-X',
      'allow.auto.create.topics=true',
      '-b',
      '127.0.0.1:1',
      '-C',
      '-t',
      topic,
      '-o',
      'beginning',
      '-J',
      '-u',
    ],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  t.after(() => void kcat.kill());
  const brokers = await new Promise<string>((resolve, reject) => {
    let seen = '';
    kcat.stderr.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const match = /replaced with (\S+)/.exec(seen);
      if (match) resolve(match[1]!);
    });
    kcat.on('error', reject);
    kcat.on('exit', (code) => reject(new Error(`kcat exited (${code}): ${seen.slice(-500)}`)));
  });
  const arrived: Arrived[] = [];
  let buffered = '';
  kcat.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    let end = buffered.indexOf('\n');
    while (end >= 0) {
      const line = buffered.slice(0, end).trim();
      buffered = buffered.slice(end + 1);
      end = buffered.indexOf('\n');
      if (!line.startsWith('{')) continue;
      const record = JSON.parse(line) as {
        key: string;
        payload: string;
        headers?: string[];
        partition: number;
        offset: number;
      };
      const headers: Record<string, string> = {};
      for (let i = 0; i + 1 < (record.headers?.length ?? 0); i += 2)
        headers[record.headers![i]!] = record.headers![i + 1]!;
      arrived.push({
        body: record.payload,
        headers,
        meta: { key: record.key, partition: record.partition, offset: record.offset },
      });
    }
  });
  return {
    url: `kafka://${brokers}`,
    brokers,
    topic,
    config: { topic },
    arrived,
    waitFor: (n, timeoutMs = 15_000) => waitUntil(arrived, n, timeoutMs),
  };
}
