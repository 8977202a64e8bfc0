import { Worker } from 'node:worker_threads';
import { LRUCache } from 'lru-cache';
import { threadExecArgv } from '../thread-flags.js';
import { type PayloadValidator, schemaSizeProblem } from '../domain/event-schema.js';
import type { CompileReply, CompileRequest, ThreadReady } from './compile-thread.js';
import { loadValidator } from './validator-code.js';

// Compiles event schemas off the event loop and keeps what it compiled. Compiling a large schema takes
// ajv up to seconds and loading its result milliseconds, so every schema is checked and compiled on a
// thread of its own (compile-thread.ts), one at a time, each within COMPILE_DEADLINE_MS from the moment the
// thread has it (a fresh thread's start is not the schema's to pay for); the event loop only loads the
// compiled code. Validators are kept by schema text, least recently used first, within
// a budget of bytes (their code and V8's compiled form), so many large schemas cost bounded memory.

/**
 * How long one schema may take to check and compile before the thread is ended and the schema refused
 * (HERALD_SCHEMA_COMPILE_DEADLINE sets the service's).
 */
export const COMPILE_DEADLINE_MS = 5_000;
/** How long a fresh thread may take to load before it counts as failed and the schema waiting for it is turned away. */
const THREAD_START_MS = 30_000;
/** Heap the compile thread may use; a schema that needs more is refused. */
const COMPILE_HEAP_MB = 256;
/** Schemas waiting for the thread past which a new one is turned away (the thread is busy, not broken). */
const MAX_WAITING = 64;

/** A schema that can never be compiled: the reason is for the client. */
export class SchemaRefused extends Error {}
/** The compiler could not answer now (its queue is full): trying again later may work. */
export class CompilerBusy extends Error {}

interface Kept {
  validate: PayloadValidator;
  bytes: number;
}

interface Job {
  request: CompileRequest;
  resolve: (kept: Kept) => void;
  reject: (error: Error) => void;
}

export interface CompilerStats {
  /** Schemas compiled on the thread since start: an emit that finds its validator kept compiles none. */
  compilations: number;
  /** Validators kept, and the bytes they count for. */
  kept: number;
  keptBytes: number;
}

export class SchemaCompiler {
  private thread: Worker | null = null;
  /** Whether `thread` has loaded and takes compiles (its ThreadReady message came). */
  private threadReady = false;
  private readonly waiting: Job[] = [];
  /** The compile under way: its timer is the start bound while the thread loads, then the deadline. */
  private running: { job: Job; timer: NodeJS.Timeout } | null = null;
  private nextId = 1;
  /**
   * Validators by schema text, within the budget: each weighs its bytes and its text's (the key is kept too;
   * one byte a character is close for JSON), and the least recently used go first. One over the whole budget
   * is not kept.
   */
  private readonly kept: LRUCache<string, Kept>;
  /** Compiles under way by schema text: concurrent requests for one schema share one compile. */
  private readonly underWay = new Map<string, Promise<Kept>>();
  private compilations = 0;
  private closed = false;

  constructor(
    /** Most bytes of validators kept (HERALD_SCHEMA_CACHE_MB). */
    budgetBytes: number,
    private readonly deadlineMs = COMPILE_DEADLINE_MS,
  ) {
    this.kept = new LRUCache({ maxSize: budgetBytes, sizeCalculation: (kept, text) => kept.bytes + text.length });
  }

  /**
   * The validator of a schema given as JSON text, compiled at most once while it is kept. Throws
   * SchemaRefused with the reason when the schema cannot be an event schema, and CompilerBusy when the
   * compiler cannot take it now.
   */
  async validator(schemaJson: string): Promise<PayloadValidator> {
    const kept = this.kept.get(schemaJson);
    if (kept) return kept.validate;
    const sizeProblem = schemaSizeProblem(schemaJson);
    if (sizeProblem) throw new SchemaRefused(sizeProblem);
    let compiling = this.underWay.get(schemaJson);
    if (!compiling) {
      compiling = this.compile(schemaJson).finally(() => this.underWay.delete(schemaJson));
      this.underWay.set(schemaJson, compiling);
    }
    const compiled = await compiling;
    if (!this.kept.has(schemaJson)) this.kept.set(schemaJson, compiled);
    return compiled.validate;
  }

  stats(): CompilerStats {
    return { compilations: this.compilations, kept: this.kept.size, keptBytes: this.kept.calculatedSize };
  }

  /** Ends the thread; compiles still waiting are refused as busy. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.waiting.splice(0)) job.reject(new CompilerBusy('the service is shutting down'));
    if (this.running) {
      clearTimeout(this.running.timer);
      this.running.job.reject(new CompilerBusy('the service is shutting down'));
      this.running = null;
    }
    await this.thread?.terminate();
    this.thread = null;
  }

  private compile(schemaJson: string): Promise<Kept> {
    if (this.closed) return Promise.reject(new CompilerBusy('the service is shutting down'));
    if (this.waiting.length >= MAX_WAITING)
      return Promise.reject(new CompilerBusy(`${MAX_WAITING} schemas are waiting to be compiled; try again shortly`));
    return new Promise<Kept>((resolve, reject) => {
      this.waiting.push({ request: { id: this.nextId++, schemaJson }, resolve, reject });
      this.runNext();
    });
  }

  private runNext(): void {
    if (this.running || this.closed) return;
    const job = this.waiting.shift();
    if (!job) return;
    this.startedThread();
    this.compilations++;
    if (this.threadReady) {
      this.send(job);
      return;
    }
    const timer = setTimeout(
      () => this.threadFailed(new CompilerBusy(`the schema compile thread did not start in ${THREAD_START_MS} ms`)),
      THREAD_START_MS,
    );
    this.running = { job, timer };
  }

  /** Hands `job` to the thread, which is ready, and starts its deadline. */
  private send(job: Job): void {
    const timer = setTimeout(
      () =>
        this.threadFailed(
          new SchemaRefused(`schema takes more than ${this.deadlineMs} ms to check and compile: simplify it`),
        ),
      this.deadlineMs,
    );
    this.running = { job, timer };
    this.thread!.postMessage(job.request);
  }

  /** The thread has loaded: the compile waiting for it goes now. */
  private started(): void {
    this.threadReady = true;
    const running = this.running;
    if (!running) return;
    clearTimeout(running.timer);
    this.send(running.job);
  }

  private startedThread(): Worker {
    if (this.thread) return this.thread;
    const thread = new Worker(new URL('./compile-thread.js', import.meta.url), {
      execArgv: threadExecArgv(),
      resourceLimits: { maxOldGenerationSizeMb: COMPILE_HEAP_MB },
    });
    thread.unref();
    thread.on('message', (reply: CompileReply | ThreadReady) => {
      if (this.thread !== thread) return;
      if ('ready' in reply) this.started();
      else this.answered(reply);
    });
    thread.on('error', (error) => {
      // A thread already ended (at a deadline) has nothing running any more.
      if (this.thread !== thread) return;
      this.threadFailed(
        /heap|memory/i.test(error.message)
          ? new SchemaRefused(`schema needs more than ${COMPILE_HEAP_MB} MB to compile: simplify it`)
          : new CompilerBusy(
              `the schema compile thread failed (${error.message}); a new one starts with the next schema`,
            ),
      );
    });
    thread.on('exit', () => {
      if (this.thread !== thread) return;
      this.thread = null;
      this.threadReady = false;
    });
    this.thread = thread;
    this.threadReady = false;
    return thread;
  }

  private answered(reply: CompileReply): void {
    const running = this.running;
    if (!running || running.job.request.id !== reply.id) return;
    clearTimeout(running.timer);
    this.running = null;
    if ('problem' in reply) running.job.reject(new SchemaRefused(reply.problem));
    else {
      try {
        const { validate } = loadValidator(reply.code, reply.cachedData);
        running.job.resolve({ validate, bytes: reply.bytes });
      } catch (error) {
        running.job.reject(error as Error);
      }
    }
    this.runNext();
  }

  /** The running compile ends with `error`; the thread is ended and the next schema gets a fresh one. */
  private threadFailed(error: Error): void {
    const running = this.running;
    this.running = null;
    if (running) {
      clearTimeout(running.timer);
      running.job.reject(error);
    }
    const thread = this.thread;
    this.thread = null;
    this.threadReady = false;
    void thread?.terminate();
    this.runNext();
  }
}
