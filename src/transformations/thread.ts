// Runs on a worker thread of a TransformationPool (pool.ts): tenants' code in the sandbox, off the event loop
// that every tenant's attempts and requests share. One run at a time; the pool sends the next when this one
// answers.
import { parentPort, workerData } from 'node:worker_threads';
import { Sandbox, type SandboxLimits } from './sandbox.js';
import type { RunCall, RunReply } from './pool.js';

const sandbox = new Sandbox(workerData as SandboxLimits);
const port = parentPort!;
// Runs wait for the warm-up, so that none pays for compiling the engine.
const warmed = sandbox.warm().catch(() => {});

port.on('message', (call: RunCall | 'close') => {
  if (call === 'close') {
    sandbox.close();
    port.close();
    return;
  }
  warmed
    .then(() => sandbox.run(call.key, call.code, call.input))
    .then(
      (outcome) => port.postMessage({ id: call.id, ...outcome } satisfies RunReply),
      (error: unknown) =>
        port.postMessage({ id: call.id, error: `failed: ${(error as Error).message}` } satisfies RunReply),
    );
});
