import { Logger, makeWorkerUtils, run, runMigrations } from 'graphile-worker';
import pg from 'pg';
import type { DeliveryJob, JobProducer, JobSender } from './job.js';

// graphile-worker 0.17 as the peers scenario runs it, in a database of its own: its schema migrated, the
// backlog added through its add_jobs() SQL function, drained by one runner in the configuration of its
// performance page (docs/benchmarks.md, "peers"): a local queue that fetches jobs in batches and batched
// completion and failure, with one pool connection per job in flight plus one.

const TASK = 'deliver';
const ADD_BATCH = 1_000;

export function graphileOptions(connectionString: string, concurrency: number) {
  return {
    connectionString,
    concurrency,
    // One connection per job in flight and one for the runner's LISTEN, as the performance page sizes it.
    maxPoolSize: concurrency + 1,
    preset: {
      worker: {
        // The performance page's batching: 500 jobs fetched (and locked) per query, completions and
        // failures written together as soon as the event loop is free.
        localQueue: { size: 500 },
        completeJobBatchDelay: 0,
        failJobBatchDelay: 0,
      },
    },
    noHandleSignals: true,
    // Per-job success lines go nowhere; NO_LOG_SUCCESS (set by the bench) skips building them.
    logger: new Logger(() => () => {}),
  };
}

export async function graphileEnqueue(connectionString: string, jobs: DeliveryJob[]): Promise<void> {
  await runMigrations({ connectionString, logger: new Logger(() => () => {}) });
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    for (let from = 0; from < jobs.length; from += ADD_BATCH) {
      const specs = jobs.slice(from, from + ADD_BATCH).map((payload) => ({ identifier: TASK, payload }));
      await client.query(
        'select count(*) from graphile_worker.add_jobs(array(select json_populate_recordset(null::graphile_worker.job_spec, $1::json)))',
        [JSON.stringify(specs)],
      );
    }
  } finally {
    await client.end();
  }
}

/** Adds each job as the application emits it (`WorkerUtils.addJob`), its schema migrated first. */
export async function graphileProducer(connectionString: string): Promise<JobProducer> {
  const utils = await makeWorkerUtils({ connectionString, logger: new Logger(() => () => {}) });
  await utils.migrate();
  return {
    add: async (job) => void (await utils.addJob(TASK, job)),
    close: async () => await utils.release(),
  };
}

export async function graphileWorker(
  connectionString: string,
  concurrency: number,
  sender: JobSender,
): Promise<{ close(): Promise<void> }> {
  const runner = await run({
    ...graphileOptions(connectionString, concurrency),
    taskList: { [TASK]: (payload) => sender.deliver(payload as DeliveryJob) },
  });
  return { close: () => runner.stop() };
}
