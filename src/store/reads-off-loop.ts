import { Worker } from 'node:worker_threads';
import type { CompiledQuery } from 'kysely';
import { threadExecArgv } from '../thread-flags.js';
import { endThread } from './end-thread.js';

// Reads whose cost grows with a tenant's history (stats over a month of attempts) must not hold the event
// loop that every tenant's requests share. On PostgreSQL a read is a request to the server and the loop is
// free while it runs; on the embedded store better-sqlite3 reads on the calling thread, so these reads go
// to a thread of their own (read-thread.ts), started on first use and one read at a time.

export interface ReadCall {
  id: number;
  sql: string;
  parameters: readonly unknown[];
}

export type ReadReply = { id: number; rows: unknown[] } | { id: number; error: string };

/** Runs a compiled read and answers its rows. */
export type OffLoopReader = <Row>(query: CompiledQuery<Row>) => Promise<Row[]>;

export class ReadsOffLoop {
  private thread: Worker | null = null;
  private exited: Promise<void> = Promise.resolve();
  private readonly waiting = new Map<number, { resolve(rows: unknown[]): void; reject(error: Error): void }>();
  private nextId = 0;

  constructor(private readonly file: string) {}

  readonly read: OffLoopReader = <Row>(query: CompiledQuery<Row>) =>
    new Promise<Row[]>((resolve, reject) => {
      const id = this.nextId++;
      this.waiting.set(id, { resolve: resolve as (rows: unknown[]) => void, reject });
      this.started().postMessage({ id, sql: query.sql, parameters: query.parameters } satisfies ReadCall);
    });

  async stop(): Promise<void> {
    const thread = this.thread;
    if (!thread) return;
    this.thread = null;
    await endThread(thread, this.exited, 2_000);
  }

  private started(): Worker {
    if (this.thread) return this.thread;
    const thread = new Worker(new URL('./read-thread.js', import.meta.url), {
      workerData: { file: this.file },
      execArgv: threadExecArgv({ profile: false }),
    });
    // Never what keeps the process alive; a read waiting keeps its own request open.
    thread.unref();
    thread.on('message', (reply: ReadReply) => {
      const waiting = this.waiting.get(reply.id);
      if (!waiting) return;
      this.waiting.delete(reply.id);
      if ('rows' in reply) waiting.resolve(reply.rows);
      else waiting.reject(new Error(reply.error));
    });
    thread.on('error', () => {}); // followed by 'exit'
    this.exited = new Promise<void>((resolve) =>
      thread.once('exit', () => {
        // Reads under way fail; the next read starts a new thread.
        if (this.thread === thread) this.thread = null;
        for (const waiting of this.waiting.values()) waiting.reject(new Error('the read thread ended'));
        this.waiting.clear();
        resolve();
      }),
    );
    this.thread = thread;
    return thread;
  }
}
