// Runs on a worker thread of a TransformationPool (pool.ts): tenants' code in the sandbox, off the event loop
// that every tenant's attempts and requests share. One turn at a time (runs of one or more endpoints, each
// endpoint's in order); the pool sends the next when this one answers. A turn ends early, its other runs not
// made, once a run's deadline has passed since it began or a run failed at its deadline: a turn holds the
// thread for about two deadlines at most, however many runs it carried. A run that came without its code
// for a version not compiled here (dropped, or never sent to this thread) ends the turn unmade too: the pool
// sends it again, with its code, first. Before each run the thread writes which run it is and when it
// must have ended into memory it shares with the pool (RunProgress), which ends the thread when a run is
// stuck past that in code where no deadline is checked.
import { parentPort, workerData } from 'node:worker_threads';
import { MISSING_CODE, Sandbox, type RunOutcome } from './sandbox.js';
import type { RunCall, RunReply, ThreadData } from './pool.js';
import { RunProgress } from './run-progress.js';

const { limits, runtimesKept, progress: shared } = workerData as ThreadData;
const sandbox = new Sandbox(limits, runtimesKept);
const progress = new RunProgress(shared);
const calling = (deadline: number) => progress.calling(deadline);
const port = parentPort!;
// Runs wait for the warm-up, so that none pays for compiling the engine.
const warmed = sandbox.warm().catch(() => {});

async function turn(calls: RunCall[]): Promise<RunReply[]> {
  await warmed;
  const began = Date.now();
  const replies: RunReply[] = [];
  for (const [index, call] of calls.entries()) {
    if (replies.length > 0 && Date.now() - began >= limits.timeoutMs) break;
    let outcome: RunOutcome | typeof MISSING_CODE;
    progress.begin(index, Date.now() + sandbox.longestMs(call.input));
    try {
      outcome = await sandbox.run(call.key, call.code, call.input, calling, call.keep);
    } catch (error) {
      outcome = { error: `failed: ${(error as Error).message}` };
    }
    if (outcome === MISSING_CODE) break;
    replies.push({ id: call.id, ...outcome });
    if ('error' in outcome && outcome.error.startsWith('deadline')) break;
  }
  progress.answered();
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
