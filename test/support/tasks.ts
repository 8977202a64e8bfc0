import { taskKey } from '../../src/domain/outcome-plan.js';
import type { ClaimedTask } from '../../src/store/queue/index.js';

// Claimed tasks made up for the tests of the worker's parts on their own (lanes, the claim loop).

let ids = 0;

/** A claimed task of `endpointId`, each with ids of its own, leased for a minute. */
export function task(endpointId: string): ClaimedTask {
  ids++;
  return {
    id: taskKey(`dlv_${ids}`, 1),
    delivery_id: `dlv_${ids}`,
    endpoint_id: endpointId,
    trigger: 'scheduled',
    attempt_number: 1,
    leaseUntil: Date.now() + 60_000,
  };
}
