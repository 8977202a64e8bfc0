import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import type { DeliveryJob, JobProducer, JobSender } from './job.js';

// BullMQ as the peers scenario runs it: one queue under a key prefix of its own (so the bench removes its
// keys and nothing else on the Redis server), filled with addBulk, drained by one Worker in its documented
// throughput configuration: `concurrency` as the jobs in flight, finished jobs removed as they complete.

export const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const QUEUE = 'deliveries';
const ADD_BATCH = 1_000;

/** The Worker's options besides the connection (docs/benchmarks.md, "peers", says why each). */
export function bullmqWorkerOptions(concurrency: number) {
  return {
    concurrency,
    removeOnComplete: { count: 0 },
    removeOnFail: { count: 5_000 },
  };
}

/** A connection the Worker and the Queue accept (a blocking client must not give up on a command). */
function connection() {
  const url = new URL(REDIS_URL);
  return { host: url.hostname, port: Number(url.port || 6379), maxRetriesPerRequest: null };
}

export async function bullmqEnqueue(prefix: string, jobs: DeliveryJob[]): Promise<void> {
  const queue = new Queue(QUEUE, { connection: connection(), prefix });
  try {
    for (let from = 0; from < jobs.length; from += ADD_BATCH)
      await queue.addBulk(jobs.slice(from, from + ADD_BATCH).map((data) => ({ name: 'deliver', data })));
  } finally {
    await queue.close();
  }
}

/** Adds each job as the application emits it (`Queue.add`, the queue's default job options). */
export function bullmqProducer(prefix: string): JobProducer {
  const queue = new Queue(QUEUE, { connection: connection(), prefix });
  return {
    add: async (job) => void (await queue.add('deliver', job)),
    close: () => queue.close(),
  };
}

export function bullmqWorker(prefix: string, concurrency: number, sender: JobSender): { close(): Promise<void> } {
  const worker = new Worker<DeliveryJob>(QUEUE, (job) => sender.deliver(job.data), {
    connection: connection(),
    prefix,
    ...bullmqWorkerOptions(concurrency),
  });
  worker.on('error', (error) => console.error('bullmq worker:', error.message));
  return { close: () => worker.close() };
}

/** Whether Redis answers on REDIS_URL. */
export async function redisAvailable(): Promise<boolean> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 2_000, maxRetriesPerRequest: 0 });
  try {
    await redis.connect();
    return (await redis.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

/** Removes every key under the prefix (SCAN and UNLINK, never FLUSHALL: the server is shared). */
export async function removeKeys(prefix: string): Promise<number> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  let removed = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1_000);
      cursor = next;
      if (keys.length > 0) removed += await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return removed;
}
