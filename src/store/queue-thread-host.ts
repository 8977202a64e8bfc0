import { parentPort, workerData } from 'node:worker_threads';
import { SecretBox } from '../domain/secrets.js';
import { connectSqlite } from './db.js';
import { Endpoints } from './endpoints.js';
import { openQueue } from './queue/index.js';
import { PURGE_BATCH, purgeExpired } from './retention.js';
import { Workers } from './workers.js';
import { outcomeEventSink, raisePolicy } from './operational.js';
import type { StoreContext } from './common.js';
import type { QueueCall, QueueReply, QueueThreadData } from './queue-thread.js';

// Runs on the queue thread (queue-thread.ts): a Queue on a connection of its own, serving the calls the
// service's event loop posts, one reply per call; and telling it, unasked, when outcomes queued attempts.

const { file, secretKey, previousSecretKeys, policy, retentionMs, auditRetentionMs } = workerData as QueueThreadData;
const { db } = open();
const ctx: StoreContext = { db, dialect: 'sqlite', now: Date.now };
const port = parentPort!;
// Attempts of operational webhooks queued with outcomes wake the service's worker (QueueThread's onQueued).
const raise = raisePolicy('sqlite', policy.retryScheduleMs);
const queue = openQueue(
  ctx,
  { endpoints: new Endpoints(ctx, new SecretBox(secretKey, previousSecretKeys)), events: outcomeEventSink(db, raise) },
  policy,
  () => port.postMessage({ queued: true } satisfies QueueReply),
);
const workers = new Workers(ctx, raise);
const underWay = new Set<Promise<void>>();
let closing = false;

function open() {
  try {
    // The service opened (and migrated) the file before starting the thread.
    return connectSqlite(file, { fileMustExist: true });
  } catch (error) {
    // A plain Error: better-sqlite3's own loses its message on the way to the service's thread.
    throw new Error(`cannot open ${file}: ${(error as Error).message}`);
  }
}

async function run(call: QueueCall): Promise<unknown> {
  switch (call.method) {
    case 'claimLoaded':
      return queue.claimLoaded(...call.args);
    case 'release':
      return queue.release(...call.args);
    case 'nextDueAt':
      return queue.nextDueAt(...call.args);
    case 'extendLease': {
      // The task is a copy here: the new lease end goes back for the caller's task.
      const [task, owner] = call.args;
      return (await queue.extendLease(task, owner)) ? task.leaseUntil : null;
    }
    case 'load':
      return queue.load(...call.args);
    case 'endpointsNow':
      return queue.endpointsNow(...call.args);
    case 'drop':
      return queue.drop(...call.args);
    case 'completeMany':
      return queue.completeMany(...call.args);
    case 'advanceFifo':
      return queue.advanceFifo(...call.args);
    case 'takeStarts':
      return queue.takeStarts(...call.args);
    case 'beat':
      return workers.beat(...call.args);
    case 'reapDead':
      return workers.reapDead(...call.args);
    case 'forget':
      return workers.forget(...call.args);
    case 'raiseStoredEvents':
      return workers.raiseStoredEvents();
    case 'purgeExpired':
      return purgeExpired(ctx, { retentionMs, auditRetentionMs }, PURGE_BATCH, () => closing);
  }
}

port.on('message', (message: { id: number; call: QueueCall } | 'close') => {
  if (message === 'close') {
    // Answer what is under way first (a purge stops at its next batch), then close the connection.
    closing = true;
    void Promise.allSettled(underWay)
      .then(() => db.destroy())
      .finally(() => port.close());
    return;
  }
  const { id, call } = message;
  const done = run(call).then(
    (result) => port.postMessage({ id, result } satisfies QueueReply),
    (error: unknown) => {
      const { message: text, code } =
        error instanceof Error ? (error as Error & { code?: string }) : { message: String(error), code: undefined };
      port.postMessage({ id, error: { message: text, code } } satisfies QueueReply);
    },
  );
  underWay.add(done);
  void done.finally(() => underWay.delete(done));
});
