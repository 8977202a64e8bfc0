import { traceOf } from '../tracing/tracer.js';
import type { Logger } from 'pino';
import type { AttemptInput, AttemptResult, WorkerQueue } from '../store/queue/index.js';
import { GroupCommit } from '../store/group-commit.js';
import type { Store } from '../store/index.js';
import { storeErrorCause, storeErrorKind } from '../store/errors.js';

/**
 * Under load (the last batch held more than one outcome), an outcome batch starts at least this long after
 * the one before it ended. A batch's fixed cost barely grows with its rows: on PostgreSQL a round trip, on
 * SQLite a message each way to the queue thread (each waking a thread) and a commit that writes every page
 * it touched once, however many of its deliveries share the page. A few milliseconds that gather more
 * outcomes into a batch cut that cost per delivery. An attempt's slot frees when its request ends, so the
 * wait delays only when its outcome shows in the API, never a send; a worker recording one outcome at a
 * time never waits.
 */
const OUTCOME_SPACING_MS = { postgres: 15, sqlite: 5 } as const;

/** Times an outcome is written before the attempt is left to its lease. */
export const RECORD_TRIES = 4;

/**
 * What to do after a store refused to record an outcome (errors.ts says what the error means): try the
 * same again shortly when the database was away or busy, or full (space may come back before the lease
 * runs out, which spares sending the attempt again); try once more without the receiver's answer when it
 * refused a value (the answer is the only value from outside); otherwise give up, and the attempt is made
 * again after its lease.
 */
export function afterRefusal(error: unknown, answerKept: boolean): 'again' | 'without-answer' | 'give-up' {
  const kind = storeErrorKind(error);
  if (kind === 'unavailable' || kind === 'full') return 'again';
  if (kind === 'data' && answerKept) return 'without-answer';
  return 'give-up';
}

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
    private readonly log: Pick<Logger, 'warn'>,
  ) {
    this.commits = new GroupCommit(
      // One failed transaction must not fail the others of its batch.
      (batch) => this.recordMany(batch),
      // Outcomes that arrive while a batch is written wait for the next one, so fewer lanes make bigger
      // batches (fewer statements per outcome); a second lane on PostgreSQL keeps a batch of failures
      // (several statements each) from holding up the rest. An endpoint's slot does not wait for this.
      dialect === 'sqlite'
        ? { maxParallel: 1, minSpacingMs: OUTCOME_SPACING_MS.sqlite }
        : { maxParallel: 2, minSpacingMs: OUTCOME_SPACING_MS.postgres },
    );
  }

  record(input: AttemptInput, result: AttemptResult): Promise<boolean | Error> {
    return this.commits.submit({ input, result });
  }

  /**
   * Records a batch in one transaction. A store that was away, busy or full rolled it back, so the batch is
   * tried again as it is; one that refused something in it (a value, a constraint) records each outcome on
   * its own, so one bad outcome does not fail the others. Each fallback is logged once, with its cause.
   */
  private async recordMany(batch: { input: AttemptInput; result: AttemptResult }[]): Promise<(boolean | Error)[]> {
    if (batch.length === 1) return [await this.recordOne(batch[0]!.input, batch[0]!.result)];
    for (let tries = 1; ; tries++) {
      try {
        return await this.queue.completeMany(batch, this.owner);
      } catch (error) {
        const again = afterRefusal(error, false) === 'again' && tries < RECORD_TRIES;
        this.log.warn(
          { err: error, cause: storeErrorCause(error), outcomes: batch.length, try: tries },
          again
            ? 'outcome batch not recorded (the store was away, busy or full); trying the batch again'
            : 'outcome batch not recorded; recording each outcome on its own',
        );
        if (!again) break;
        await pause(tries);
      }
    }
    return Promise.all(batch.map(({ input, result }) => this.recordOne(input, result)));
  }

  /**
   * Records one outcome: again while the store is away, busy or full (RECORD_TRIES in all), once without the
   * receiver's answer if the store refuses a value (an answer the database refuses must not keep the
   * attempt from being recorded: it would be sent again at every lease, for ever), and otherwise leaves
   * the attempt to its lease, with the error.
   */
  private async recordOne(input: AttemptInput, result: AttemptResult): Promise<boolean | Error> {
    let outcome = result;
    for (let tries = 1; ; tries++) {
      try {
        const [owned] = await this.queue.completeMany([{ input, result: outcome }], this.owner);
        return owned!;
      } catch (error) {
        const next = tries < RECORD_TRIES ? afterRefusal(error, hasAnswer(outcome)) : 'give-up';
        if (next === 'give-up') return error instanceof Error ? error : new Error(String(error));
        if (next === 'without-answer') {
          this.log.warn(
            {
              err: error,
              cause: storeErrorCause(error),
              delivery_id: input.task.delivery_id,
              trace_id: traceOf(input.delivery).traceId,
            },
            "the store refused an outcome's values; recording it without the receiver's answer",
          );
          outcome = withoutAnswer(result);
        } else await pause(tries);
      }
    }
  }
}

const pause = (tries: number) => new Promise((resolve) => setTimeout(resolve, 50 * tries));

/** Whether the outcome holds what withoutAnswer leaves out. */
function hasAnswer(result: AttemptResult): boolean {
  return result.responseBody !== null || result.responseHeaders != null || result.requestHeaders != null;
}

/** The outcome without the receiver's answer (and the headers kept with it), which could not be stored. */
function withoutAnswer(result: AttemptResult): AttemptResult {
  const note = "the receiver's answer could not be stored";
  return {
    ...result,
    responseBody: null,
    requestHeaders: null,
    responseHeaders: null,
    error: result.error === null ? note : `${result.error}; ${note}`,
  };
}
