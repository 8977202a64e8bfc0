import { parentPort, workerData } from 'node:worker_threads';
import { SecretBox } from '../domain/secrets.js';
import { connectSqlite } from './db.js';
import { Endpoints } from './endpoints.js';
import { Queue, type QueuePolicy } from './queue.js';
import type { StoreContext } from './common.js';
import type { QueueCall, QueueReply, QueueThreadData } from './queue-thread.js';

// Runs on the queue thread (queue-thread.ts): a Queue on a connection of its own, serving the calls the
// service's event loop posts. Calls run concurrently as they would on the event loop; the driver takes
// them through the one connection in turn.

const { file, secretKey, policy } = workerData as QueueThreadData;
// The service opened (and migrated) the file before starting the thread.
const { db } = connectSqlite(file, { fileMustExist: true });
const ctx: StoreContext = { db, dialect: 'sqlite', now: Date.now };
const queue = new Queue(ctx, new Endpoints(ctx, new SecretBox(secretKey)), policy satisfies QueuePolicy);
const port = parentPort!;

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
    case 'drop':
      return queue.drop(...call.args);
    case 'completeMany':
      return queue.completeMany(...call.args);
  }
}

port.on('message', (message: { id: number; call: QueueCall } | 'close') => {
  if (message === 'close') {
    void db.destroy().finally(() => port.close());
    return;
  }
  const { id, call } = message;
  run(call).then(
    (result) => port.postMessage({ id, result } satisfies QueueReply),
    (error: unknown) => {
      const { message: text, code } = error instanceof Error ? (error as Error & { code?: string }) : { message: String(error), code: undefined };
      port.postMessage({ id, error: { message: text, code } } satisfies QueueReply);
    },
  );
});
