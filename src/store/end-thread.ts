import type { Worker } from 'node:worker_threads';

/** Asks a thread of the store to end ('close'), terminates it if it has not within `graceMs`, and waits for its exit. */
export async function endThread(thread: Worker, exited: Promise<void>, graceMs: number): Promise<void> {
  thread.postMessage('close');
  const timer = setTimeout(() => void thread.terminate(), graceMs);
  await exited;
  clearTimeout(timer);
}
