import type { Config } from '../config.js';
import { type StartingWebhook, type TransformedRequest, transformedRequest } from '../domain/transformations.js';
import { TransformationPool } from './pool.js';

// The one door to transformations (decisions, "Fourth wave", Transformations) for the worker and the API:
// a run of an endpoint's code on the pool's threads (pool.ts, sandbox.ts), and its return value checked
// (src/domain/transformations.ts). Whatever goes wrong comes back as words for the attempt's error or for
// simulate's 400, never as a throw.

export type TransformationOutcome = { request: TransformedRequest } | { problem: string };

/**
 * What a returned webhook may hold beside its payload (method, URL, headers) before the sandbox refuses it
 * unread: the payload's own limit is checked exactly once it is parsed (transformedRequest).
 */
const RETURN_ROOM_BYTES = 64 * 1024;

/** A pool and its holders: it stops when the last holder has closed its share. */
interface Shared {
  pool: TransformationPool;
  holders: number;
}

type TransformationSettings = Pick<
  Config,
  'transformationTimeoutMs' | 'transformationMemoryBytes' | 'transformationThreads' | 'maxPayloadBytes'
>;

/** One holder's share of a transformation pool: a new one makes its pool, `share` gives another holder the same. */
export class Transformations {
  private readonly shared: Shared;
  private closed = false;

  constructor(
    private readonly config: TransformationSettings,
    of?: Transformations,
  ) {
    this.shared = of?.shared ?? {
      pool: new TransformationPool(
        {
          timeoutMs: config.transformationTimeoutMs,
          memoryBytes: config.transformationMemoryBytes,
          maxReturnedChars: config.maxPayloadBytes + RETURN_ROOM_BYTES,
        },
        config.transformationThreads,
      ),
      holders: 0,
    };
    this.shared.holders++;
  }

  /**
   * Runs `code` on `webhook`, taking a turn as `group` (an endpoint: one run of it at a time); `version`
   * names the code's version, so each is compiled once per thread. `urlProblem` judges a changed URL by
   * the endpoint's address rules. Not `keep` (a simulation): the code is compiled for this run alone, so
   * that drafts take no delivering endpoint's place among the runtimes each thread keeps.
   */
  async apply(
    group: string,
    version: string,
    code: string,
    webhook: StartingWebhook,
    urlProblem: (url: string) => string | null,
    keep = true,
  ): Promise<TransformationOutcome> {
    const outcome = await this.shared.pool.run(group, `${group}@${version}`, code, webhook.json, keep);
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
    const outcome = await this.shared.pool.run(group, 'check', code, null);
    return 'error' in outcome ? outcome.error : null;
  }

  /**
   * A share of the same pool for another holder, who closes it when done with it: a process's API and its
   * worker (role `all`) share one, so the process keeps one set of threads and one compiled engine per thread.
   */
  share(): Transformations {
    return new Transformations(this.config, this);
  }

  /** Lets go of this share (once; again changes nothing); the last share let go stops the threads. */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    return --this.shared.holders > 0 ? Promise.resolve() : this.shared.pool.close();
  }
}

/** An attempt's error when its transformation gave no request. */
export function transformationError(problem: string): string {
  return `transformation failed: ${problem}`;
}
