import { Worker } from 'node:worker_threads';
import { LRUCache } from 'lru-cache';
import { threadExecArgv } from '../thread-flags.js';
import { endThread } from '../store/end-thread.js';
import type { RunOutcome, SandboxLimits } from './sandbox.js';
import { ANSWERED, POSTED, RunProgress } from './run-progress.js';

// Transformations run on threads of their own, so that no tenant's code holds the event loop every tenant
// shares. Each endpoint (a run's `group`) has its runs under way on at most one thread at a time, and the
// endpoints with runs waiting take turns, so code that spins to its deadline holds at most one thread. A
// turn is one message carrying up to TURN_RUNS waiting runs (one group's, then more of groups at home on
// that thread), so a thread does not sit idle for a round trip per run while the event loop that answers it
// is busy. The thread stops a turn early once a run's deadline has passed since it began or a run failed at
// its deadline, and the runs it did not make go back to the front of their groups' queues: a spinning
// endpoint delays the others in its turn by one deadline at most. A group prefers the thread it last ran
// on (its home, where its code is compiled: groupFor). A run can be stuck where no deadline reaches it
// (inside the engine's own C code: joining a billion array holes): the thread shares which run it is making,
// and by when it must end, through memory the pool reads (RunProgress), and a run past that and a grace
// ends its thread, which is replaced. That run fails; the other runs of its turn go again, first, on the
// new thread, so one endpoint's stuck code fails no other's attempt; a version once stopped so takes its
// later turns alone, so that it cannot take other runs down again. A version's code goes to a thread once:
// its later runs there carry their input alone (callFor), and one the thread has dropped comes back unmade
// and goes again with its code.

export interface RunCall {
  id: number;
  key: string;
  /** The code of `key`'s version; null: sent to this thread before (it answers such a run unmade if it has not kept it). */
  code: string | null;
  /** The webhook as JSON; null: compile only. */
  input: string | null;
  /** Whether the thread keeps the version compiled for later runs (not for a simulation's draft). */
  keep: boolean;
}

export type RunReply = { id: number } & RunOutcome;

/**
 * What a sandbox thread is started with: its runs' limits, how many compiled runtimes it keeps, and the
 * memory it shares its progress through.
 */
export interface ThreadData {
  limits: SandboxLimits;
  runtimesKept: number;
  progress: SharedArrayBuffer;
}

const STOPPING: RunOutcome = { error: 'failed: the service is stopping' };

/**
 * Compiled runtimes each thread keeps (one per endpoint version, about 75 KB each), the least recently used
 * going first. Each endpoint runs on its home thread when it can, so the threads hold different endpoints'
 * code.
 */
const RUNTIMES_KEPT = 512;
/** Most runs in one turn, of whichever groups it carries. */
const TURN_RUNS = 32;
/** Waiting groups a thread looks through for one whose code it has compiled. */
const LOOKAHEAD = 16;
/** How long the longest waiting group waits for its home thread's turn to end before it goes elsewhere. */
const PATIENCE_MS = 2;
/** Code versions remembered as stopped stuck, which take turns alone (the least recently stopped are forgotten). */
const STOPPED_KEPT = 10_000;
/**
 * Code versions remembered per thread as sent there (the least recently sent forgotten): twice what a thread
 * keeps compiled, so a version it still has is seldom sent again, and one it dropped costs one unmade run
 * and a second send.
 */
const SENT_KEPT = 2 * RUNTIMES_KEPT;

/**
 * Time past a run's own end (its deadline, and its compile's: Sandbox.longestMs) after which it is taken
 * to be stuck and its thread ended. A deadline reached in the engine's bytecode ends the run within a
 * millisecond or so; the rest is room for a thread that a busy machine has not scheduled.
 */
const RUN_GRACE_MS = 500;
/**
 * How long a thread may take to begin a turn's first run: at once unless a busy machine has not scheduled
 * it, or a new thread's warm-up (WARM_UP_MS more) runs first.
 */
const BEGIN_GRACE_MS = 2_000;
const WARM_UP_MS = 10_000;

interface Job {
  id: number;
  group: string;
  call: RunCall;
  resolve(outcome: RunOutcome): void;
}

interface Slot {
  thread: Worker;
  /** No turn has come back yet: the thread may still be warming up. */
  fresh: boolean;
  exited: Promise<void>;
  /** The turn under way: runs of one or more groups, each group's in order; null: idle. */
  jobs: Job[] | null;
  /** When the turn under way began. */
  startedAt: number;
  timer: NodeJS.Timeout | null;
  /** The code versions (run keys) whose code went to this thread, so runs of them go without it. */
  sent: LRUCache<string, true>;
  /** The run the thread is making, shared with it. */
  progress: RunProgress;
  /** The pool ended the thread: a run of its turn was stuck. */
  stuck: boolean;
}

export class TransformationPool {
  private readonly slots: Slot[] = [];
  /** Runs waiting, by group, in arrival order. */
  private readonly waiting = new Map<string, Job[]>();
  /** Groups with a run under way. */
  private readonly busy = new Set<string>();
  /** The thread each group last ran on, where its code is compiled (its home). */
  private readonly homes: LRUCache<string, Slot>;
  /** Code versions (run keys) a run of which was stopped stuck: their turns carry no other group's runs. */
  private readonly stopped = new LRUCache<string, true>({ max: STOPPED_KEPT });
  private nextId = 0;
  private closed = false;

  constructor(
    private readonly limits: SandboxLimits,
    private readonly threads: number,
  ) {
    // Groups whose home is remembered, the least recently run forgotten: a home matters while its thread
    // keeps the group's code compiled, so twice what the threads keep is room enough.
    this.homes = new LRUCache({ max: 2 * Math.max(1, threads) * RUNTIMES_KEPT });
  }

  /**
   * Runs `code`'s handler on `input`; `key` names the code's version, `group` whose turn it takes (an
   * endpoint). Not `keep`: the thread compiles the version for this run alone unless it has it.
   */
  run(group: string, key: string, code: string, input: string | null, keep = true): Promise<RunOutcome> {
    if (this.closed) return Promise.resolve(STOPPING);
    return new Promise((resolve) => {
      const id = this.nextId++;
      const job: Job = { id, group, call: { id, key, code, input, keep }, resolve };
      const queue = this.waiting.get(group);
      if (queue) queue.push(job);
      else this.waiting.set(group, [job]);
      this.pump();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const jobs of this.waiting.values()) for (const job of jobs) job.resolve(STOPPING);
    this.waiting.clear();
    await Promise.all(this.slots.map((slot) => endThread(slot.thread, slot.exited, 2_000)));
  }

  /** Gives every idle thread a turn, and starts a thread while runs wait and fewer than `threads` run. */
  private pump(): void {
    for (let started = true; started; ) {
      started = false;
      for (const slot of this.slots) {
        if (slot.jobs !== null) continue;
        const turn = this.turnFor(slot);
        if (turn.length === 0) continue;
        this.start(slot, turn);
        started = true;
      }
      if (!started && this.slots.length < this.threads && this.anyWaiting()) {
        const slot = this.newSlot();
        this.slots.push(slot);
        started = true;
      }
    }
  }

  private anyWaiting(): boolean {
    for (const group of this.waiting.keys()) if (!this.busy.has(group)) return true;
    return false;
  }

  /**
   * The runs `slot` makes next: the first group groupFor gives, then more groups at home there (strict),
   * up to TURN_RUNS runs, each group's in order. One message carries them, so a thread is not left idle
   * between runs while the event loop that answers it is busy.
   */
  private turnFor(slot: Slot): Job[] {
    const turn: Job[] = [];
    for (let strict = false; turn.length < TURN_RUNS; strict = true) {
      const group = this.groupFor(slot, strict);
      if (group === null) break;
      const alone = this.wasStopped(group);
      turn.push(...this.take(group, TURN_RUNS - turn.length));
      if (alone) break;
    }
    return turn;
  }

  /** Whether the group's next run is of a version once stopped stuck (it takes its turn alone). */
  private wasStopped(group: string): boolean {
    return this.stopped.size > 0 && this.stopped.has(this.waiting.get(group)![0]!.call.key);
  }

  /**
   * The group whose runs `slot` takes. Groups take turns in the order they have waited, and each prefers
   * its home thread, where its code is compiled (making a runtime costs ten runs): among the first
   * LOOKAHEAD waiting groups, the first at home here (or with no home) goes first, unless the longest
   * waiting group's home has been on one turn for PATIENCE_MS (it may be slow: that group goes here now).
   * A group whose home is idle is left to its home; a slot with nothing better takes the longest waiting,
   * unless `strict` (filling a turn: only groups at home here, and none whose code was stopped stuck).
   */
  private groupFor(slot: Slot, strict: boolean): string | null {
    const now = Date.now();
    let longest: string | null = null;
    let looked = 0;
    for (const group of this.waiting.keys()) {
      if (this.busy.has(group) || (strict && this.wasStopped(group))) continue;
      const home = this.homes.peek(group);
      if (home === undefined || home === slot || !this.slots.includes(home)) return group;
      if (home.jobs !== null && longest === null && !strict) {
        if (now - home.startedAt >= PATIENCE_MS) return group;
        longest = group;
      }
      if (++looked >= LOOKAHEAD) break;
    }
    return longest;
  }

  /** The group's oldest runs, up to `most`; the group goes to the back of the turns. */
  private take(group: string, most: number): Job[] {
    const jobs = this.waiting.get(group)!;
    const turn = jobs.splice(0, most);
    // A Map keeps insertion order: deleted and set again, the group is last.
    this.waiting.delete(group);
    if (jobs.length > 0) this.waiting.set(group, jobs);
    this.busy.add(group);
    return turn;
  }

  private start(slot: Slot, jobs: Job[]): void {
    slot.jobs = jobs;
    slot.startedAt = Date.now();
    for (const group of new Set(jobs.map((job) => job.group))) {
      this.homes.set(group, slot);
    }
    slot.progress.posted();
    this.watch(slot, this.limits.timeoutMs + RUN_GRACE_MS);
    slot.thread.postMessage(jobs.map((job) => this.callFor(slot, job.call)));
  }

  /** Looks at the slot's turn in `ms`, unless it has ended by then (finish clears the timer). */
  private watch(slot: Slot, ms: number): void {
    slot.timer = setTimeout(() => this.check(slot), ms);
    slot.timer.unref();
  }

  /**
   * A turn running long: a run past its end and RUN_GRACE_MS is stuck, and its thread is ended (the exit
   * handler fails that run and queues the turn's others again). An answer on its way is waited for.
   */
  private check(slot: Slot): void {
    slot.timer = null;
    if (slot.jobs === null) return;
    const progress = slot.progress.read();
    if (progress === ANSWERED) return;
    const limit =
      progress === POSTED
        ? slot.startedAt + BEGIN_GRACE_MS + (slot.fresh ? WARM_UP_MS : 0)
        : progress.until + RUN_GRACE_MS;
    const now = Date.now();
    if (now < limit) {
      this.watch(slot, limit - now);
      return;
    }
    slot.stuck = true;
    void slot.thread.terminate();
  }

  /**
   * The call as `slot` gets it: without its code when the code of that version went to the thread before
   * (a run carries its input, not the endpoint's code again, up to 64 KB); a compile-only run, and one the
   * thread does not keep, always has it.
   */
  private callFor(slot: Slot, call: RunCall): RunCall {
    if (call.input === null || !call.keep) return call;
    if (slot.sent.get(call.key)) return { ...call, code: null };
    slot.sent.set(call.key, true);
    return call;
  }

  /** A turn's answers: each run made resolves; the rest wait at the front of their group's queue again. */
  private finish(slot: Slot, replies: RunReply[], unmade: RunOutcome | null): void {
    const jobs = slot.jobs;
    if (!jobs) return;
    if (slot.timer) clearTimeout(slot.timer);
    slot.jobs = null;
    slot.timer = null;
    slot.fresh = false;
    const answered = new Map(replies.map(({ id, ...outcome }) => [id, outcome as RunOutcome]));
    const left = new Map<string, Job[]>();
    for (const job of jobs) {
      this.busy.delete(job.group);
      // A run not made goes with its code next time: the thread may not have it.
      if (!answered.has(job.id)) slot.sent.delete(job.call.key);
      const outcome = answered.get(job.id) ?? unmade;
      if (outcome) job.resolve(outcome);
      else if (this.closed) job.resolve(STOPPING);
      else if (left.has(job.group)) left.get(job.group)!.push(job);
      else left.set(job.group, [job]);
    }
    // A group none of whose runs were made lost its turn to the run that ended it: it goes first. A group
    // with runs made (the one that ended the turn) waits behind every other.
    const made = new Set(jobs.filter((job) => answered.has(job.id)).map((job) => job.group));
    const first: [string, Job[]][] = [];
    for (const [group, unmadeJobs] of left) {
      const queue = [...unmadeJobs, ...(this.waiting.get(group) ?? [])];
      this.waiting.delete(group);
      if (made.has(group)) this.waiting.set(group, queue);
      else first.push([group, queue]);
    }
    if (first.length > 0) {
      const rest = [...this.waiting];
      this.waiting.clear();
      for (const [group, queue] of [...first, ...rest]) this.waiting.set(group, queue);
    }
    this.pump();
  }

  private newSlot(): Slot {
    const progress = new RunProgress();
    const workerData: ThreadData = { limits: this.limits, runtimesKept: RUNTIMES_KEPT, progress: progress.buffer };
    const thread = new Worker(new URL('./thread.js', import.meta.url), {
      workerData,
      execArgv: threadExecArgv({ profile: false }),
    });
    // Never what keeps the process alive: a run waiting keeps its attempt or request open.
    thread.unref();
    const slot: Slot = {
      thread,
      fresh: true,
      exited: Promise.resolve(),
      jobs: null,
      startedAt: 0,
      timer: null,
      sent: new LRUCache({ max: SENT_KEPT }),
      progress,
      stuck: false,
    };
    thread.on('message', (replies: RunReply[]) => this.finish(slot, replies, null));
    thread.on('error', () => {}); // followed by 'exit'
    slot.exited = new Promise<void>((resolve) =>
      thread.once('exit', () => {
        const index = this.slots.indexOf(slot);
        if (index >= 0) this.slots.splice(index, 1);
        this.ended(slot);
        resolve();
      }),
    );
    return slot;
  }

  /**
   * The slot's thread has ended (stuck, or it failed): the run it was making fails, and the turn's other
   * runs go again first, on another thread. Ended between runs, no tenant's code was running: the runs go
   * again, unless the thread never answered a turn (its warm-up failed), so that a thread that cannot start
   * does not take the same runs down again and again.
   */
  private ended(slot: Slot): void {
    if (this.closed) {
      this.finish(slot, [], STOPPING);
      return;
    }
    const outcome = {
      error: slot.stuck
        ? `deadline of ${this.limits.timeoutMs} ms exceeded (the run was stopped)`
        : 'failed: the sandbox thread stopped',
    };
    const progress = slot.progress.read();
    const culprit = typeof progress === 'object' ? slot.jobs?.[progress.index] : undefined;
    if (!culprit) {
      this.finish(slot, [], slot.fresh ? outcome : null);
      return;
    }
    if (slot.stuck) {
      this.stopped.set(culprit.call.key, true);
    }
    this.finish(slot, [{ id: culprit.id, ...outcome }], null);
  }
}
