import type { Dispatcher, Pool } from 'undici';
import { nowMs, sleep } from './stats.js';

// Load generators. Closed loop: `concurrency` callers each send, wait for the answer, send again, for a
// fixed time. Open loop: requests leave on a schedule (rate per second) whatever the answers do, so slow
// answers cannot slow the sending down and hide latency (no coordinated omission).

export interface Target {
  pool: Pool;
  path: string;
  headers: Record<string, string>;
}

export interface Sent {
  /** Wall-clock send time (ms, sub-ms precision). */
  at: number;
  latencyMs: number;
  status: number;
  /** Response body, when `keepBodies` was asked for. */
  body?: string;
}

export interface LoadResult {
  sent: Sent[];
  errors: number;
  /** Seconds between the start and the end of measurement. */
  seconds: number;
  /** Open loop: the largest delay between a request's scheduled time and its actual send. */
  maxSendLagMs?: number;
}

async function one(target: Target, body: string, keepBody: boolean): Promise<Sent> {
  const at = nowMs();
  const started = performance.now();
  try {
    const response = await target.pool.request({ method: 'POST', path: target.path, headers: target.headers, body } as Dispatcher.RequestOptions);
    const text = keepBody ? await response.body.text() : (await response.body.dump(), undefined);
    return { at, latencyMs: performance.now() - started, status: response.statusCode, ...(text !== undefined ? { body: text } : {}) };
  } catch {
    return { at, latencyMs: performance.now() - started, status: 0 };
  }
}

/** Closed loop for `warmupMs + durationMs`; only requests sent after the warm-up are counted. */
export async function closedLoop(
  targets: Target[],
  concurrency: number,
  durationMs: number,
  warmupMs: number,
  bodyOf: (n: number) => string,
): Promise<LoadResult> {
  const start = performance.now();
  const measureFrom = start + warmupMs;
  const end = measureFrom + durationMs;
  const sent: Sent[] = [];
  let errors = 0;
  let n = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      const target = targets[worker % targets.length]!;
      while (performance.now() < end) {
        const before = performance.now();
        const result = await one(target, bodyOf(n++), false);
        if (before >= measureFrom && performance.now() <= end) {
          if (result.status >= 200 && result.status < 300) sent.push(result);
          else errors++;
        }
      }
    }),
  );
  return { sent, errors, seconds: durationMs / 1000 };
}

/** Open loop: `rate` requests per second for `durationMs`, then waits (bounded) for the answers. */
export async function openLoop(
  targets: Target[],
  rate: number,
  durationMs: number,
  bodyOf: (n: number) => string,
  keepBodies = false,
): Promise<LoadResult> {
  const start = performance.now();
  const total = Math.round((rate * durationMs) / 1000);
  const pending: Promise<Sent>[] = [];
  let maxLag = 0;
  let n = 0;
  while (n < total) {
    const elapsed = performance.now() - start;
    const due = Math.min(total, Math.floor((elapsed * rate) / 1000) + 1);
    while (n < due) {
      const scheduled = start + (n * 1000) / rate;
      maxLag = Math.max(maxLag, performance.now() - scheduled);
      pending.push(one(targets[n % targets.length]!, bodyOf(n), keepBodies));
      n++;
    }
    // Sleep until the next request is due (timers have ~1 ms resolution; the loop above catches up).
    const nextAt = start + (n * 1000) / rate;
    await sleep(Math.max(0, nextAt - performance.now() - 0.5));
  }
  const seconds = (performance.now() - start) / 1000;
  // Answers still missing 30 s after the last send count as errors (the service fell behind).
  const settled: (Sent | undefined)[] = new Array(pending.length);
  pending.forEach((p, i) => void p.then((r) => (settled[i] = r)));
  await Promise.race([Promise.all(pending), sleep(30_000)]);
  const results = settled.filter((r): r is Sent => r !== undefined);
  const ok = results.filter((r) => r.status >= 200 && r.status < 300);
  return { sent: ok, errors: pending.length - ok.length, seconds, maxSendLagMs: maxLag };
}
