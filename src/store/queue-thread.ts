import { threadExecArgv } from '../thread-flags.js';
import { Worker } from 'node:worker_threads';
import type { Config } from '../config.js';
import { sqliteFile } from './db.js';
import { endThread } from './end-thread.js';
import type { PurgeCounts } from './retention.js';
import type { WorkerRegistry } from './workers.js';
import type {
  AttemptInput,
  ClaimedTask,
  Queue,
  QueuePolicy,
  Recorded,
  RecordedInput,
  WorkerQueue,
} from './queue/index.js';

/**
 * The thread's young generation (V8's default is several times this). What a call allocates is garbage
 * once it is answered, so a small one is collected as cheaply and keeps the worker process ~25 MB smaller
 * at the same delivery rate.
 */
const THREAD_YOUNG_GENERATION_MB = 4;

/** How long close() gives the thread to finish its calls and close its connection. */
const CLOSE_TIMEOUT_MS = 10_000;

/**
 * The worker's queue on a thread of its own (embedded store, `worker` role). On SQLite every statement
 * runs on the calling thread, and in a delivery worker the queue's statements (and building them) were
 * about half of the event loop's time: here they run on a second core with the thread's own connection,
 * and the event loop only signs and sends. Each call is one message each way. The hourly retention purge
 * goes through the thread too, so that the event loop never waits for the thread's write lock (SQLite
 * waits for a lock by sleeping on the calling thread). Not for the `all` role, for that same reason: the
 * API's commits would wait for the thread's on the event loop.
 */
export class QueueThread implements WorkerQueue, WorkerRegistry {
  private thread: { worker: Worker; exited: Promise<void> } | null = null;
  private readonly pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  private nextId = 0;
  private closed = false;

  constructor(
    private readonly data: QueueThreadData,
    /** Called when the thread's outcomes queued attempts (of operational webhooks), as the Queue's onQueued. */
    private readonly onQueued: () => void = () => {},
  ) {}

  /** The queue thread for a service's configuration. */
  static forConfig(config: Config, onQueued?: () => void): QueueThread {
    const policy: QueuePolicy = {
      retryScheduleMs: config.retryScheduleMs,
      disableAfterMs: config.disableAfterMs,
      leaseMs: config.leaseMs,
      testNetwork: config.testNetwork,
    };
    return new QueueThread(
      {
        file: sqliteFile(config.dataDir),
        secretKey: config.secretKey,
        previousSecretKeys: config.previousSecretKeys,
        policy,
        retentionMs: config.retentionMs,
        auditRetentionMs: config.auditRetentionMs,
      },
      onQueued,
    );
  }

  claimLoaded(...args: Parameters<Queue['claimLoaded']>) {
    return this.call<Awaited<ReturnType<Queue['claimLoaded']>>>({ method: 'claimLoaded', args });
  }

  async release(...args: Parameters<Queue['release']>) {
    if (args[0].length > 0) await this.call<void>({ method: 'release', args });
  }

  nextDueAt(...args: Parameters<Queue['nextDueAt']>) {
    return this.call<number | null>({ method: 'nextDueAt', args });
  }

  async extendLease(task: ClaimedTask, owner: string): Promise<boolean> {
    // The thread extends a copy of the task: the new lease end is applied to this one here.
    const leaseUntil = await this.call<number | null>({ method: 'extendLease', args: [task, owner] });
    if (leaseUntil === null) return false;
    task.leaseUntil = leaseUntil;
    return true;
  }

  async load(tasks: ClaimedTask[]): Promise<AttemptInput[]> {
    // Each input comes back with a copy of its task: it gets the caller's, as the queue's load gives it.
    const inputs = await this.call<AttemptInput[]>({ method: 'load', args: [tasks] });
    const byId = new Map(tasks.map((task) => [task.id, task]));
    for (const input of inputs) input.task = byId.get(input.task.id) ?? input.task;
    return inputs;
  }

  endpointsNow(...args: Parameters<Queue['endpointsNow']>) {
    return this.call<Awaited<ReturnType<Queue['endpointsNow']>>>({ method: 'endpointsNow', args });
  }

  drop(...args: Parameters<Queue['drop']>) {
    return this.call<void>({ method: 'drop', args });
  }

  completeMany(items: Parameters<Queue['completeMany']>[0], owner: string) {
    // Only what recording reads crosses to the thread (Recorded): the payload, the opened secrets and the
    // rest of the endpoint stay here. A batch's outcomes that share an endpoint object (one claim's) share
    // one copy of it, so the message carries it once.
    const endpoints = new Map<object, RecordedInput['endpoint']>();
    const slim: Recorded[] = items.map(({ input: { task, claimedState, endpoint }, result }) => {
      let recorded: RecordedInput['endpoint'] = null;
      if (endpoint) {
        recorded = endpoints.get(endpoint) ?? null;
        if (recorded === null) {
          const { id, status, fifo, retryScheduleMs } = endpoint;
          recorded = { id, status, fifo, retryScheduleMs };
          endpoints.set(endpoint, recorded);
        }
      }
      return { input: { task, claimedState, endpoint: recorded }, result };
    });
    return this.call<boolean[]>({ method: 'completeMany', args: [slim, owner] });
  }

  advanceFifo(...args: Parameters<Queue['advanceFifo']>) {
    return this.call<number>({ method: 'advanceFifo', args });
  }

  takeStarts(...args: Parameters<Queue['takeStarts']>) {
    return this.call<number[]>({ method: 'takeStarts', args });
  }

  /** A delivery worker's heartbeat (WorkerRegistry), on the thread's connection. */
  beat(owner: string) {
    return this.call<void>({ method: 'beat', args: [owner] });
  }

  reapDead(deadAfterMs: number) {
    return this.call<number>({ method: 'reapDead', args: [deadAfterMs] });
  }

  forget(owner: string) {
    return this.call<void>({ method: 'forget', args: [owner] });
  }

  raiseStoredEvents() {
    return this.call<number>({ method: 'raiseStoredEvents', args: [] });
  }

  /** The retention purge (Store.purgeExpired), on the thread's connection. */
  purgeExpired() {
    return this.call<PurgeCounts>({ method: 'purgeExpired', args: [] });
  }

  /** Refuses new calls; the thread answers those under way, then closes its connection (or is terminated). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.thread) await endThread(this.thread.worker, this.thread.exited, CLOSE_TIMEOUT_MS);
  }

  private call<T>(call: QueueCall): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.closed) return reject(new Error('queue thread is closed'));
      const id = this.nextId++;
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      try {
        this.thread ??= this.start();
        this.thread.worker.postMessage({ id, call });
      } catch (error) {
        this.pending.delete(id);
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
  }

  /** Starts the thread; one that ends on its own fails the calls under way, and the next call starts another. */
  private start(): { worker: Worker; exited: Promise<void> } {
    // A CPU profile of the process (the benchmark's --profile) covers the thread too.
    const worker = new Worker(new URL('./queue-thread-host.js', import.meta.url), {
      workerData: this.data,
      execArgv: threadExecArgv(),
      resourceLimits: { maxYoungGenerationSizeMb: THREAD_YOUNG_GENERATION_MB },
    });
    let failure: Error | null = null;
    worker.on('message', (reply: QueueReply) => {
      if ('queued' in reply) return this.onQueued();
      const { id, result, error } = reply;
      const waiting = this.pending.get(id);
      this.pending.delete(id);
      if (!waiting) return;
      if (error) waiting.reject(Object.assign(new Error(error.message), error.code ? { code: error.code } : {}));
      else waiting.resolve(result);
    });
    // Followed by 'exit'; kept so that the failed calls say why the thread ended.
    worker.on(
      'error',
      (error) =>
        (failure = error instanceof Error ? error : new Error(String((error as { code?: string }).code ?? error))),
    );
    const exited = new Promise<void>((resolve) =>
      worker.once('exit', (code) => {
        if (this.thread?.worker === worker) this.thread = null;
        const reason = `queue thread ended (exit code ${code})${failure ? `: ${failure.message}` : ''}`;
        for (const { reject } of this.pending.values())
          reject(Object.assign(new Error(reason, { cause: failure ?? undefined }), { code: QUEUE_THREAD_ENDED }));
        this.pending.clear();
        resolve();
      }),
    );
    return { worker, exited };
  }
}

/** The code of a call's error when the queue thread ended under it: the next call starts another thread. */
export const QUEUE_THREAD_ENDED = 'HERALD_QUEUE_THREAD_ENDED';

export interface QueueThreadData {
  file: string;
  secretKey: string;
  previousSecretKeys: string[];
  policy: QueuePolicy;
  retentionMs: number;
  auditRetentionMs: number;
}

/** A call to the queue thread: a method of the queue (or the purge) and its arguments. */
export type QueueCall =
  | { [M in keyof WorkerQueue]: { method: M; args: Parameters<WorkerQueue[M]> } }[keyof WorkerQueue]
  | { method: 'purgeExpired' | 'raiseStoredEvents'; args: [] }
  | { method: 'beat' | 'forget'; args: [owner: string] }
  | { method: 'reapDead'; args: [deadAfterMs: number] };

/** A call's answer, or word that the thread's outcomes queued attempts (which answers no call). */
export type QueueReply =
  | { id: number; result?: unknown; error?: { message: string; code: string | undefined } }
  | { queued: true };
