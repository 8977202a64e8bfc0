import type { AttemptInput, AttemptResult, WorkerQueue } from '../store/queue.js';
import { GroupCommit } from '../store/group-commit.js';
import type { Store } from '../store/index.js';

/**
 * On PostgreSQL, under load, an outcome batch starts at least this long after the one before it ended. A
 * batch is one round trip whose cost barely grows with its rows, so a few milliseconds that gather more
 * outcomes into it cut the worker's round trips, and its CPU, per delivery. An attempt's slot frees when
 * its request ends, so the wait delays only when its outcome shows in the API, never a send. SQLite records
 * on the queue thread, where a batch costs little more than its rows: no wait there.
 */
const POSTGRES_OUTCOME_SPACING_MS = 5;

/** Times an outcome is written before the attempt is left to its lease. */
export const RECORD_TRIES = 4;

/**
 * Records attempts' outcomes, those that finish together in one transaction. Each resolves to whether the
 * worker still owned the task, or the error that kept it from being recorded (the attempt is then made again
 * after its lease).
 */
export class Outcomes {
  private readonly commits: GroupCommit<{ input: AttemptInput; result: AttemptResult }, boolean | Error>;

  constructor(
    private readonly queue: WorkerQueue,
    private readonly owner: string,
    dialect: Store['dialect'],
  ) {
    this.commits = new GroupCommit(
      // One failed transaction must not fail the others of its batch.
      (batch) => this.recordMany(batch),
      // Outcomes that arrive while a batch is written wait for the next one, so fewer lanes make bigger
      // batches (fewer statements per outcome); a second lane on PostgreSQL keeps a batch of failures
      // (several statements each) from holding up the rest. An endpoint's slot does not wait for this.
      dialect === 'sqlite' ? { maxParallel: 1 } : { maxParallel: 2, minSpacingMs: POSTGRES_OUTCOME_SPACING_MS },
    );
  }

  record(input: AttemptInput, result: AttemptResult): Promise<boolean | Error> {
    return this.commits.submit({ input, result });
  }

  /**
   * Records a batch. A deadlock, serialization failure or busy database rolls the transaction back, so
   * trying again is safe; giving up only means the attempt is repeated after its lease.
   */
  private async recordMany(batch: { input: AttemptInput; result: AttemptResult }[]): Promise<(boolean | Error)[]> {
    if (batch.length > 1) {
      try {
        return await this.queue.completeMany(batch, this.owner);
      } catch {
        // One bad outcome must not fail the others: fall back to one transaction each.
      }
    }
    return Promise.all(batch.map(({ input, result }) => this.recordOne(input, result)));
  }

  /**
   * Records one outcome, up to RECORD_TRIES times. The last try leaves out the receiver's answer: an answer
   * the database refuses must not keep the attempt from being recorded (it would be sent again at every
   * lease, for ever); the attempt is recorded with its status and error, and a note that its answer is lost.
   */
  private async recordOne(input: AttemptInput, result: AttemptResult): Promise<boolean | Error> {
    for (let tries = 1; ; tries++) {
      try {
        const outcome = tries === RECORD_TRIES && result.responseBody !== null ? withoutAnswer(result) : result;
        const [owned] = await this.queue.completeMany([{ input, result: outcome }], this.owner);
        return owned!;
      } catch (error) {
        if (tries >= RECORD_TRIES) return error instanceof Error ? error : new Error(String(error));
        await new Promise((resolve) => setTimeout(resolve, 50 * tries));
      }
    }
  }
}

/** The outcome without the receiver's answer, which could not be stored. */
function withoutAnswer(result: AttemptResult): AttemptResult {
  const note = "the receiver's answer could not be stored";
  return { ...result, responseBody: null, error: result.error === null ? note : `${result.error}; ${note}` };
}
