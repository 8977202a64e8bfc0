import type { Logger } from 'pino';
import type { BackgroundTasks } from '../store/background-tasks.js';
import type { BackgroundTaskRow } from '../store/schema.js';
import { randomToken } from '../domain/ids.js';

// Runs background tasks (an endpoint's recovery) in a worker process: takes one task whose lease is free,
// runs its batches one after another, each a short transaction, yielding the event loop between them, and
// renews its lease with every batch. A worker that dies leaves the task to the next one after LEASE_MS.

/** Deliveries one batch gives a new attempt: one short transaction, and a bounded read. */
export const BATCH_SIZE = 500;
/** How long a task stays with the worker running it without a batch. */
export const LEASE_MS = 15_000;
/** How often a worker looks for a task when nothing woke it. */
const POLL_MS = 1_000;
/** Batches that fail in a row before the task is `failed`. */
const MAX_FAILURES = 5;

export class BackgroundRunner {
  readonly owner = `bg_${randomToken(12)}`;
  private running = false;
  private loop: Promise<void> | null = null;
  private wakeUp: (() => void) | null = null;

  constructor(
    private readonly tasks: BackgroundTasks,
    private readonly log: Logger,
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Stops after the batch under way and lets the task go, for another worker to take up at once. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.wakeUp?.();
    await this.loop;
  }

  /** A task was created in this process: look now rather than at the next poll. */
  wake(): void {
    this.wakeUp?.();
  }

  private async run(): Promise<void> {
    while (this.running) {
      let task: BackgroundTaskRow | undefined;
      try {
        task = await this.tasks.lease(this.owner, LEASE_MS);
      } catch (error) {
        this.log.warn({ err: error }, 'could not look for background tasks; retrying');
      }
      if (task) await this.runTask(task);
      // Stopped while it looked (stop's wake-up found no sleep to end): it ends now, not after a poll.
      else if (this.running) await this.sleep(POLL_MS);
    }
  }

  private async runTask(task: BackgroundTaskRow): Promise<void> {
    for (;;) {
      if (!this.running) {
        await this.tasks.release(task, this.owner).catch(() => {});
        return;
      }
      try {
        const end = await this.tasks.runBatch(task, this.owner, LEASE_MS, BATCH_SIZE);
        if (end !== 'more') return;
      } catch (error) {
        this.log.warn({ err: error, task_id: task.id }, 'a background task batch failed; it is tried again');
        await this.tasks.batchFailed(task, this.owner, MAX_FAILURES).catch(() => {});
        return;
      }
      // The rest of the process (API requests, deliveries) runs between batches.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = () => {
        this.wakeUp = null;
        done();
      };
    });
  }
}
