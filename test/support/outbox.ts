import assert from 'node:assert/strict';
import type { AttemptInput, Queue } from '../../src/store/queue/index.js';

// For the operational outbox's tests: test/contract/store/operational-outbox.test.ts and
// test/postgres/store/operational-outbox.test.ts.

/** Claims the one due task of `endpointId` (the operational endpoint's tasks are left queued). */
export async function claimOne(queue: Queue, owner: string, endpointId: string): Promise<AttemptInput> {
  const claimed = await queue.claimLoaded(owner, 10, { only: endpointId });
  assert.equal(claimed.length, 1, 'one task claimed');
  return claimed[0]!.input!;
}
