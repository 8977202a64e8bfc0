import { Worker } from 'node:worker_threads';
import type { RunCall } from '../../src/transformations/pool.js';

/**
 * Watches the turns the transformation pool posts to its sandbox threads (src/transformations/pool.ts) until
 * the test ends, through the real threads' postMessage: how many runs carried their code, how many runs of
 * each version were posted, and which threads got runs (the pool's, not any other worker thread of the process: a turn is an array of calls).
 */
export function watchSandboxCalls(t: { after(fn: () => void): void }) {
  const seen = { withCode: 0, without: 0, threads: new Set<Worker>(), byKey: new Map<string, number>() };
  const post = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function (this: Worker, message: unknown, ...rest: unknown[]) {
    if (Array.isArray(message) && message.every((call) => typeof call === 'object' && call !== null && 'key' in call)) {
      seen.threads.add(this);
      for (const call of message as RunCall[]) {
        call.code === null ? seen.without++ : seen.withCode++;
        seen.byKey.set(call.key, (seen.byKey.get(call.key) ?? 0) + 1);
      }
    }
    return (post as (...args: unknown[]) => void).call(this, message, ...rest);
  } as typeof post;
  t.after(() => {
    Worker.prototype.postMessage = post;
  });
  return seen;
}
