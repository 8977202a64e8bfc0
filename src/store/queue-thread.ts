import { Worker } from 'node:worker_threads';
import type { AttemptInput, AttemptResult, ClaimedTask, Queue, QueuePolicy, WorkerQueue } from './queue.js';

/**
 * The worker's queue on a thread of its own (embedded store, `worker` role). On SQLite every statement
 * runs on the calling thread, and in a delivery worker the queue's statements (and building them) were
 * about half of the event loop's time: here they run on a second core with the thread's own connection,
 * and the event loop only sends. Each call is one message each way. Not for the `all` role: two writing
 * connections in one process would make the API's commits wait on the thread's (SQLite's busy wait blocks
 * the event loop), so there the worker shares the service's connection.
 */
export class QueueThread implements WorkerQueue {
  private thread: Worker | null = null;
  private readonly pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  private nextId = 0;
  private closed = false;

  constructor(private readonly data: QueueThreadData) {}

  claimLoaded(...args: Parameters<Queue['claimLoaded']>) {
    return this.call<Awaited<ReturnType<Queue['claimLoaded']>>>({ method: 'claimLoaded', args });
  }

  release(...args: Parameters<Queue['release']>) {
    return this.call<void>({ method: 'release', args });
  }

  nextDueAt(...args: Parameters<Queue['nextDueAt']>) {
    return this.call<number | null>({ method: 'nextDueAt', args });
  }

  async extendLease(task: ClaimedTask, owner: string): Promise<boolean> {
    const leaseUntil = await this.call<number | null>({ method: 'extendLease', args: [task, owner] });
    if (leaseUntil === null) return false;
    task.leaseUntil = leaseUntil;
    task.run_at = leaseUntil;
    return true;
  }

  load(...args: Parameters<Queue['load']>) {
    return this.call<AttemptInput[]>({ method: 'load', args });
  }

  drop(...args: Parameters<Queue['drop']>) {
    return this.call<void>({ method: 'drop', args });
  }

  completeMany(...args: Parameters<Queue['completeMany']>) {
    return this.call<boolean[]>({ method: 'completeMany', args });
  }

  async complete(input: AttemptInput, result: AttemptResult, owner: string): Promise<boolean> {
    const [owned] = await this.completeMany([{ input, result }], owner);
    return owned!;
  }

  /** Waits for the calls under way, then closes the thread's connection. */
  async close(): Promise<void> {
    this.closed = true;
    const thread = this.thread;
    if (!thread) return;
    while (this.pending.size > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const exited = new Promise((resolve) => thread.once('exit', resolve));
    thread.postMessage('close');
    const timer = setTimeout(() => void thread.terminate(), 2_000);
    await exited;
    clearTimeout(timer);
  }

  private call<T>(call: QueueCall): Promise<T> {
    if (this.closed) return Promise.reject(new Error('queue thread is closed'));
    const thread = (this.thread ??= this.start());
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      thread.postMessage({ id, call });
    });
  }

  /** Starts the thread; one that ends on its own fails the calls under way, and the next call starts another. */
  private start(): Worker {
    // execArgv: the entry registers the loader it needs itself, whichever way the process was started;
    // a CPU profile of the process (the benchmark's --profile) covers the thread too.
    const execArgv = process.execArgv.filter((flag, i, all) => flag.startsWith('--cpu-prof') || all[i - 1] === '--cpu-prof-dir');
    const thread = new Worker(new URL('./queue-thread-entry.mjs', import.meta.url), { workerData: this.data, execArgv });
    thread.on('message', ({ id, result, error }: QueueReply) => {
      const waiting = this.pending.get(id);
      this.pending.delete(id);
      if (!waiting) return;
      if (error) waiting.reject(Object.assign(new Error(error.message), error.code ? { code: error.code } : {}));
      else waiting.resolve(result);
    });
    thread.on('error', () => {}); // followed by 'exit'
    thread.once('exit', (code) => {
      if (this.thread === thread) this.thread = null;
      for (const { reject } of this.pending.values()) reject(new Error(`queue thread ended (exit code ${code})`));
      this.pending.clear();
    });
    return thread;
  }
}

export interface QueueThreadData {
  file: string;
  secretKey: string;
  policy: QueuePolicy;
}

/** A call to the queue thread: a method of the queue and its arguments. */
export type QueueCall = {
  [M in keyof WorkerQueue]: { method: M; args: Parameters<WorkerQueue[M]> };
}[Exclude<keyof WorkerQueue, 'complete'>];

export type QueueReply = { id: number; result?: unknown; error?: { message: string; code: string | undefined } };
