import type { Config } from '../config.js';
import { type StartingWebhook, type TransformedRequest, transformedRequest } from '../domain/transformations.js';
import { TransformationPool } from './pool.js';

// The one door to transformations (decisions, "Fourth wave", Transformations) for the worker and the API:
// a run of an endpoint's code on the pool's threads (pool.ts, sandbox.ts), and its return value checked
// (src/domain/transformations.ts). Whatever goes wrong comes back as words for the attempt's error or for
// simulate's 400, never as a throw.

export type TransformationOutcome = { request: TransformedRequest } | { problem: string };

export class Transformations {
  private readonly pool: TransformationPool;
  /** Who holds this pool (share): it closes when the last of them closes it. */
  private holders = 1;
  /** Runs asked of the pool so far, compile checks included (every holder's). */
  runs = 0;

  constructor(
    private readonly config: Pick<
      Config,
      'transformationTimeoutMs' | 'transformationMemoryBytes' | 'transformationThreads' | 'maxPayloadBytes'
    >,
  ) {
    this.pool = new TransformationPool(
      { timeoutMs: config.transformationTimeoutMs, memoryBytes: config.transformationMemoryBytes },
      config.transformationThreads,
    );
  }

  /**
   * Runs `code` on `webhook`, taking a turn as `group` (an endpoint: one run of it at a time); `version`
   * names the code's version, so each is compiled once per thread. `urlProblem` judges a changed URL by
   * the endpoint's address rules.
   */
  async apply(
    group: string,
    version: string,
    code: string,
    webhook: StartingWebhook,
    urlProblem: (url: string) => string | null,
  ): Promise<TransformationOutcome> {
    this.runs++;
    const outcome = await this.pool.run(group, `${group}@${version}`, code, webhook.json);
    if ('error' in outcome) return { problem: outcome.error };
    const checked = transformedRequest(outcome.returned, this.config.maxPayloadBytes);
    if ('problem' in checked) return checked;
    if (checked.request.url !== webhook.url) {
      const problem = urlProblem(checked.request.url);
      if (problem) return { problem: `bad return value: ${problem}` };
    }
    return checked;
  }

  /** Why `code` cannot be an endpoint's transformation (it does not compile, or defines no handler); null when it can. */
  async codeProblem(group: string, code: string): Promise<string | null> {
    this.runs++;
    const outcome = await this.pool.run(group, 'check', code, null);
    return 'error' in outcome ? outcome.error : null;
  }

  /**
   * The same pool for one more holder, who closes it when done with it: a process's API and its worker
   * (role `all`) share one, so that the process keeps one set of threads and one compiled engine per thread,
   * not two.
   */
  share(): Transformations {
    this.holders++;
    return this;
  }

  /** Lets go of this holder's share; the last to let go stops the threads. */
  close(): Promise<void> {
    if (this.holders === 0) return Promise.resolve();
    return --this.holders > 0 ? Promise.resolve() : this.pool.close();
  }
}

/** An attempt's error when its transformation gave no request. */
export function transformationError(problem: string): string {
  return `transformation failed: ${problem}`;
}
