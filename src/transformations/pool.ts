import { Worker } from 'node:worker_threads';
import { threadExecArgv } from '../thread-flags.js';
import { endThread } from '../store/end-thread.js';
import type { RunOutcome, SandboxLimits } from './sandbox.js';

// Transformations run on threads of their own, so that no tenant's code holds the event loop every tenant
// shares. Runs are taken fairly: each endpoint (a run's `group`) has at most one run under way at a time,
// and the endpoints with runs waiting take turns, so code that spins to its deadline holds one thread and
// delays only its own endpoint's runs. A thread that does not answer within its run's deadline and a grace
// is ended (the run fails) and replaced.

export interface RunCall {
  id: number;
  key: string;
  code: string;
  /** The webhook as JSON; null: compile only. */
  input: string | null;
}

export type RunReply = { id: number } & RunOutcome;

/**
 * Time past a run's own deadline after which its thread is taken to be stuck and ended: room for compiling
 * the code's top level (sandbox.ts, COMPILE_DEADLINE_MS) and a second more; a new thread's first run also
 * waits for its warm-up.
 */
const STUCK_GRACE_MS = 2_000;
const WARM_UP_MS = 10_000;

interface Job {
  id: number;
  group: string;
  call: RunCall;
  resolve(outcome: RunOutcome): void;
}

interface Slot {
  thread: Worker;
  /** No run has come back yet: the thread may still be warming up. */
  fresh: boolean;
  exited: Promise<void>;
  job: Job | null;
  timer: NodeJS.Timeout | null;
}

export class TransformationPool {
  private readonly slots: Slot[] = [];
  /** Runs waiting, by group, in arrival order. */
  private readonly waiting = new Map<string, Job[]>();
  /** Groups with a run under way. */
  private readonly busy = new Set<string>();
  private nextId = 0;
  private closed = false;

  constructor(
    private readonly limits: SandboxLimits,
    private readonly threads: number,
  ) {}

  /** Runs `code`'s handler on `input`; `key` names the code's version, `group` whose turn it takes (an endpoint). */
  run(group: string, key: string, code: string, input: string | null): Promise<RunOutcome> {
    if (this.closed) return Promise.resolve({ error: 'failed: the service is stopping' });
    return new Promise((resolve) => {
      const id = this.nextId++;
      const job: Job = { id, group, call: { id, key, code, input }, resolve };
      const queue = this.waiting.get(group);
      if (queue) queue.push(job);
      else this.waiting.set(group, [job]);
      this.pump();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const jobs of this.waiting.values())
      for (const job of jobs) job.resolve({ error: 'failed: the service is stopping' });
    this.waiting.clear();
    await Promise.all(this.slots.map((slot) => endThread(slot.thread, slot.exited, 2_000)));
  }

  private pump(): void {
    for (;;) {
      const job = this.nextJob();
      if (!job) return;
      const slot = this.freeSlot();
      if (!slot) return;
      this.take(job);
      this.start(slot, job);
    }
  }

  /** The oldest run of the group that has waited longest for a turn, among groups with none under way. */
  private nextJob(): Job | null {
    for (const [group, jobs] of this.waiting) if (!this.busy.has(group)) return jobs[0]!;
    return null;
  }

  private take(job: Job): void {
    const jobs = this.waiting.get(job.group)!;
    jobs.shift();
    // The group goes to the back of the turns (a Map keeps insertion order).
    this.waiting.delete(job.group);
    if (jobs.length > 0) this.waiting.set(job.group, jobs);
    this.busy.add(job.group);
  }

  private freeSlot(): Slot | null {
    const idle = this.slots.find((slot) => slot.job === null);
    if (idle) return idle;
    if (this.slots.length >= this.threads) return null;
    const slot = this.newSlot();
    this.slots.push(slot);
    return slot;
  }

  private start(slot: Slot, job: Job): void {
    slot.job = job;
    const stuckAfter = this.limits.timeoutMs + STUCK_GRACE_MS + (slot.fresh ? WARM_UP_MS : 0);
    slot.timer = setTimeout(() => void slot.thread.terminate(), stuckAfter);
    slot.timer.unref();
    slot.thread.postMessage(job.call);
  }

  private finish(slot: Slot, outcome: RunOutcome): void {
    const job = slot.job;
    if (!job) return;
    if (slot.timer) clearTimeout(slot.timer);
    slot.job = null;
    slot.timer = null;
    slot.fresh = false;
    this.busy.delete(job.group);
    job.resolve(outcome);
    this.pump();
  }

  private newSlot(): Slot {
    const thread = new Worker(new URL('./thread.js', import.meta.url), {
      workerData: this.limits,
      execArgv: threadExecArgv({ profile: false }),
    });
    // Never what keeps the process alive: a run waiting keeps its attempt or request open.
    thread.unref();
    const slot: Slot = { thread, fresh: true, exited: Promise.resolve(), job: null, timer: null };
    thread.on('message', (reply: RunReply) => {
      if (slot.job?.id !== reply.id) return;
      const { id: _id, ...outcome } = reply;
      this.finish(slot, outcome);
    });
    thread.on('error', () => {}); // followed by 'exit'
    slot.exited = new Promise<void>((resolve) =>
      thread.once('exit', () => {
        const index = this.slots.indexOf(slot);
        if (index >= 0) this.slots.splice(index, 1);
        this.finish(slot, { error: `deadline of ${this.limits.timeoutMs} ms exceeded (the run was stopped)` });
        resolve();
      }),
    );
    return slot;
  }
}
