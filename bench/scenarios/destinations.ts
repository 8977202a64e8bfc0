import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { connect as amqpConnect } from 'amqplib';
import { connect as natsConnect } from 'nats';
import { Redis } from 'ioredis';
import { startFauxqs } from 'fauxqs';
import { emitBody, setupOrg } from '../lib/herald.js';
import { tempDir } from '../lib/procs.js';
import { setBacklogRunAt } from '../lib/backlog.js';
import { nowMs, round } from '../lib/stats.js';
import { mb, target, type Context, type ScenarioResult } from '../lib/context.js';
import { closeTargets, emitCount, emitTargets, heraldOptions, startHerald, stopAll } from './common.js';
import { benchPayload, ENDPOINT_CONCURRENCY, inLanes } from './delivery.js';
import { Publishers } from '../../src/delivery/destinations/index.js';
import { checkedDestination, type Destination, type DestinationType } from '../../src/domain/destinations.js';
import { outboundBody } from '../../src/domain/envelope.js';
import { signPayload } from '../../src/domain/secrets.js';

// Each destination type drained by Herald (SQLite, one worker process: a backlog emitted with the worker
// off, then made due) against the same client publishing the same signed messages with no queue: Herald's
// own publisher for the type (src/delivery/destinations/), ENDPOINT_CONCURRENCY publishes at a time. Both
// count a message when the broker acknowledged it: Herald's deliveries read `success` in its store, the raw
// client's publishes resolved. The brokers are this machine's (RabbitMQ, NATS JetStream, Redis,
// Mosquitto), librdkafka's mock cluster in kcat, and the fauxqs emulator for SQS and S3.

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const DRAIN_LIMIT_MS = 120_000;

interface Broker {
  url: string;
  config: Record<string, unknown>;
  /** Settings of the Herald worker (Kafka's mock cannot answer an idempotent producer). */
  env?: Record<string, string>;
  close(): Promise<void>;
}

const suffix = () => `${process.pid}${Date.now().toString(36)}`;

async function broker(type: DestinationType): Promise<Broker> {
  switch (type) {
    case 'rabbitmq': {
      const url = 'amqp://guest:guest@127.0.0.1:5672';
      const connection = await amqpConnect(url);
      const channel = await connection.createChannel();
      const queue = `herald-bench-${suffix()}`;
      await channel.assertQueue(queue, { durable: true });
      return {
        url,
        config: { routing_key: queue },
        close: async () => {
          await channel.deleteQueue(queue).catch(() => {});
          await connection.close().catch(() => {});
        },
      };
    }
    case 'nats': {
      const nc = await natsConnect({ servers: '127.0.0.1:4222' });
      const jsm = await nc.jetstreamManager();
      const name = `HERALD_BENCH_${suffix()}`.toUpperCase();
      await jsm.streams.add({ name, subjects: [`${name.toLowerCase()}.>`], duplicate_window: 120_000_000_000 });
      return {
        url: 'nats://127.0.0.1:4222',
        config: { subject: `${name.toLowerCase()}.{event_type}` },
        close: async () => {
          await jsm.streams.delete(name).catch(() => {});
          await nc.close().catch(() => {});
        },
      };
    }
    case 'redis': {
      const client = new Redis({ host: '127.0.0.1', port: 6379 });
      const stream = `herald-bench-${suffix()}`;
      return {
        url: 'redis://127.0.0.1:6379/0',
        config: { stream },
        close: async () => {
          await client.del(stream).catch(() => {});
          client.disconnect();
        },
      };
    }
    case 'mqtt':
      return {
        url: 'mqtt://127.0.0.1:1883',
        config: { topic: `herald-bench/${suffix()}/{event_type}` },
        close: async () => {},
      };
    case 'kafka': {
      const topic = `herald-bench-${suffix()}`;
      const kcat = spawn(
        'kcat',
        ['-X', 'test.mock.num.brokers=3', '-b', '127.0.0.1:1', '-C', '-t', topic, '-o', 'end', '-q'],
        {
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      const brokers = await mockBrokers(kcat);
      return {
        url: `kafka://${brokers}`,
        config: { topic },
        env: { HERALD_KAFKA_IDEMPOTENT: 'false' },
        close: async () => void kcat.kill(),
      };
    }
    case 'sqs':
    case 's3': {
      const server = await startFauxqs({ port: 0, logger: false });
      const aws = {
        region: 'us-east-1',
        access_key_id: 'bench',
        secret_access_key: 'bench-secret',
        endpoint_url: `http://127.0.0.1:${server.port}`,
      };
      if (type === 's3') {
        server.createBucket('herald-bench');
        return { url: 's3://herald-bench', config: aws, close: () => server.stop() };
      }
      const { queueUrl } = server.createQueue('herald-bench');
      return { url: queueUrl, config: aws, close: () => server.stop() };
    }
  }
}

/** The bootstrap servers kcat's mock cluster listens on, from its first lines. */
function mockBrokers(kcat: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    kcat.stderr!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const match = /replaced with (\S+)/.exec(seen);
      if (match) resolve(match[1]!);
    });
    kcat.on('error', reject);
    kcat.on('exit', (code) => reject(new Error(`kcat exited (${code}): ${seen.slice(-300)}`)));
  });
}

/** Herald's drain of `count` messages to one destination; deliveries a second, acknowledged. */
async function heraldDrain(ctx: Context, type: DestinationType, b: Broker, count: number) {
  const dataDir = tempDir(`herald-bench-${type}-`);
  const env = { HERALD_ENDPOINT_CONCURRENCY: String(ENDPOINT_CONCURRENCY), ...b.env };
  const api = await startHerald(heraldOptions(ctx, { name: `destinations-${type}-api`, role: 'api', dataDir, env }));
  const setup = await setupOrg(
    api.url!,
    1,
    1,
    () => b.url,
    () => ({ type, config: b.config }),
  );
  const targets = emitTargets([api.url!], setup.key, 32);
  await emitCount(targets, count, 32, (n) => emitBody(setup.appIds[0]!, n));
  await closeTargets(targets);
  let peak = await stopAll(api);
  await setBacklogRunAt(Date.now() + 3_600_000, dataDir);
  const worker = await startHerald(
    heraldOptions(ctx, { name: `destinations-${type}-worker`, role: 'worker', dataDir, env }),
  );
  const db = new SQLite(join(dataDir, 'herald.db'), { readonly: true });
  try {
    const settled = db.prepare("select count(*) as n from deliveries where status = 'success'");
    const failed = db.prepare('select count(*) as n from attempts');
    await setBacklogRunAt(Date.now(), dataDir);
    // Timed from the first delivery recorded to the last, as the HTTP drains time from the first arrival
    // to the last: the worker's first look at a backlog made due from outside is not the publisher's cost.
    const limit = nowMs() + DRAIN_LIMIT_MS;
    let first: { at: number; done: number } | null = null;
    let done = 0;
    while (nowMs() < limit) {
      done = (settled.get() as { n: number }).n;
      if (first === null && done > 0) first = { at: nowMs(), done };
      if (done >= count) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const seconds = first ? (nowMs() - first.at) / 1000 : DRAIN_LIMIT_MS / 1000;
    const rate = first && seconds > 0 ? (done - first.done) / seconds : 0;
    const failures = (failed.get() as { n: number }).n;
    peak = Math.max(peak, await stopAll(worker));
    return { rate: round(rate, 0), delivered: done, failures, peak };
  } finally {
    db.close();
    await stopAll(worker);
  }
}

/** The same signed messages through Herald's own publisher for the type, ENDPOINT_CONCURRENCY at a time. */
async function rawPublish(type: DestinationType, b: Broker, count: number): Promise<number> {
  const checked = checkedDestination(type, b.url, b.config, null);
  if (typeof checked === 'string') throw new Error(checked);
  const destination: Destination = { type, appId: 'app_bench', ...checked, url: b.url };
  const publishers = new Publishers({
    attemptTimeoutMs: 15_000,
    ssrfAllow: [],
    kafkaIdempotent: b.env?.HERALD_KAFKA_IDEMPOTENT !== 'false',
  });
  const createdAt = Date.now();
  const started = nowMs();
  try {
    await inLanes(count, ENDPOINT_CONCURRENCY, async (n) => {
      const body = outboundBody('invoice.paid', createdAt, benchPayload(n));
      const id = `evt_bench${String(n).padStart(17, '0')}`;
      const timestamp = Math.floor(Date.now() / 1000);
      const values = {
        event_type: 'invoice.paid',
        app_id: 'app_bench',
        app_uid: '',
        endpoint_id: 'ep_bench',
        message_id: id,
      };
      const result = await publishers.publish(
        destination,
        {
          url: b.url,
          body,
          publicOnly: false,
          headers: {
            'webhook-id': id,
            'webhook-timestamp': String(timestamp),
            'webhook-signature': signPayload(SECRET, id, timestamp, body),
          },
        },
        { id, eventType: 'invoice.paid', values },
      );
      if (!result.ok) throw new Error(`raw ${type} publish failed: ${result.error}`);
    });
    return round((count / (nowMs() - started)) * 1000, 0);
  } finally {
    await publishers.close();
  }
}

export async function destinations(ctx: Context): Promise<ScenarioResult> {
  const count = ctx.quick ? 500 : 5_000;
  // BENCH_DESTINATION_TYPES (a comma-separated list, say `redis,nats`) runs only those types.
  const only = process.env.BENCH_DESTINATION_TYPES?.split(',').map((type) => type.trim());
  const types = (['rabbitmq', 'nats', 'redis', 'mqtt', 'kafka', 'sqs', 's3'] as DestinationType[]).filter(
    (type) => !only || only.includes(type),
  );
  const figures: Record<string, number> = { deliveries: count };
  const baseline: Record<string, number> = {};
  const ratios: Record<string, number> = {};
  const targets = [];
  let peak = 0;
  for (const type of types) {
    ctx.log(`  ${type}: Herald, then the raw client`);
    const forHerald = await broker(type);
    let herald: Awaited<ReturnType<typeof heraldDrain>>;
    try {
      herald = await heraldDrain(ctx, type, forHerald, count);
    } finally {
      await forHerald.close();
    }
    const forRaw = await broker(type);
    let raw: number;
    try {
      raw = await rawPublish(type, forRaw, count);
    } finally {
      await forRaw.close();
    }
    peak = Math.max(peak, herald.peak);
    figures[`${type}DeliveriesPerSec`] = herald.rate;
    figures[`${type}Delivered`] = herald.delivered;
    figures[`${type}FailedAttempts`] = herald.failures;
    baseline[`${type}RawPerSec`] = raw;
    const ratio = round(herald.rate / raw);
    ratios[`${type}VsRaw`] = ratio;
    targets.push(target(`${type} delivery vs its raw client`, '>= 0.50x', ratio, ratio >= 0.5));
  }
  return {
    name: 'destinations',
    title: 'Delivery to each destination type beside its raw client (SQLite, worker role)',
    store: 'sqlite',
    figures,
    baseline,
    ratios,
    peakRssMb: mb(peak),
    targets,
    notes: [
      `${count} messages to one destination per type, HERALD_ENDPOINT_CONCURRENCY=${ENDPOINT_CONCURRENCY}; the raw client is Herald's own publisher for the type with ${ENDPOINT_CONCURRENCY} publishes at a time, signing each message, with no queue and no store`,
      'a message counts once the broker acknowledged it: Herald from its first delivery recorded success to its last (its store read every 10 ms), the raw client from its first publish to its last acknowledgement',
      'brokers: RabbitMQ, NATS JetStream, Redis and Mosquitto on this machine; Kafka: librdkafka mock cluster in kcat (3 brokers; HERALD_KAFKA_IDEMPOTENT=false, as the mock cannot answer an idempotent producer); SQS and S3: the fauxqs emulator in the bench process',
    ],
    seconds: 0,
  };
}
