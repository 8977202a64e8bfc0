// Runs on a worker thread of a TransformationPool (pool.ts): tenants' code in the sandbox, off the event loop
// that every tenant's attempts and requests share. One turn at a time (runs of one or more endpoints, each
// endpoint's in order); the pool sends the next when this one answers. A turn ends early, its other runs not
// made, once a run's deadline has passed since it began or a run failed at its deadline: a turn holds the
// thread for about two deadlines at most, however many runs it carried. A run that came without its code
// for a version not compiled here (dropped, or never sent to this thread) ends the turn unmade too: the pool
// sends it again, with its code, first.
import { parentPort, workerData } from 'node:worker_threads';
import { MISSING_CODE, Sandbox, type RunOutcome, type SandboxLimits } from './sandbox.js';
import type { RunCall, RunReply } from './pool.js';

const limits = workerData as SandboxLimits;
const sandbox = new Sandbox(limits);
const port = parentPort!;
// Runs wait for the warm-up, so that none pays for compiling the engine.
const warmed = sandbox.warm().catch(() => {});

async function turn(calls: RunCall[]): Promise<RunReply[]> {
  await warmed;
  const began = Date.now();
  const replies: RunReply[] = [];
  for (const call of calls) {
    if (replies.length > 0 && Date.now() - began >= limits.timeoutMs) break;
    let outcome: RunOutcome | typeof MISSING_CODE;
    try {
      outcome = await sandbox.run(call.key, call.code, call.input);
    } catch (error) {
      outcome = { error: `failed: ${(error as Error).message}` };
    }
    if (outcome === MISSING_CODE) break;
    replies.push({ id: call.id, ...outcome });
    if ('error' in outcome && outcome.error.startsWith('deadline')) break;
  }
  return replies;
}

port.on('message', (message: RunCall[] | 'close') => {
  if (message === 'close') {
    sandbox.close();
    port.close();
    return;
  }
  void turn(message).then((replies) => port.postMessage(replies));
});
