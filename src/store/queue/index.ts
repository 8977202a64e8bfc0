import type pg from 'pg';
import type { StoreContext } from '../common.js';
import {
  dueReading,
  enqueueManual,
  firstAttempt,
  hasHead,
  hasQueued,
  holdEndpoint,
  nextAttemptAt,
  releaseHeld,
  releaseSilentWorkers,
  stopEndpoints,
  unparkAll,
} from './book.js';
import type { QueueDriver } from './driver.js';
import { PostgresQueue } from './postgres.js';
import { SqliteQueue } from './sqlite.js';
import type { QueueDeps, QueuePolicy } from './types.js';

// The queue's one front door: no module outside src/store/queue/ imports another file of it
// (test/unit/store/queue-ownership.test.ts). It offers two things:
// - the worker's port (WorkerQueue): claim due attempts under a lease, load what sending needs, extend
//   and release leases, and record each outcome with its consequences in one transaction; a driver per
//   database implements it, and what an outcome does is decided by the planner (src/domain/outcome-plan.ts);
// - the queue's book (QueueBook): the changes other store modules make to deliveries' queues inside their
//   own transactions (an emit's first attempts, a manual attempt, an endpoint's queue stopped or unparked,
//   a dead worker's attempts handed back) and the reads of the queue they need.

export type { OutcomeEvent } from '../../domain/outcome-plan.js';
export { CLAIMED_PAYLOAD_LIMIT } from './inputs.js';
export { QUEUE_COLUMNS } from './columns.js';
export type {
  AttemptInput,
  AttemptResult,
  ClaimedState,
  ClaimedTask,
  ClaimScope,
  EndpointAccess,
  OutcomeEventSink,
  QueueDeps,
  QueuePolicy,
  Recorded,
  RecordedInput,
} from './types.js';

/** The queue of one store: its database's driver (SqliteQueue or PostgresQueue). */
export type Queue = QueueDriver;

/** What a delivery worker uses of the queue: the Queue itself, or a QueueThread standing in for it. */
export type WorkerQueue = Pick<
  Queue,
  | 'claimLoaded'
  | 'release'
  | 'nextDueAt'
  | 'extendLease'
  | 'load'
  | 'endpointsNow'
  | 'drop'
  | 'completeMany'
  | 'takeStarts'
  | 'advanceFifo'
>;

/** The queue's book: what other store modules do to deliveries' queues, in the caller's transaction. */
export interface QueueBook {
  firstAttempt: typeof firstAttempt;
  enqueueManual: typeof enqueueManual;
  stopEndpoints: typeof stopEndpoints;
  unparkAll: typeof unparkAll;
  holdEndpoint: typeof holdEndpoint;
  releaseHeld: typeof releaseHeld;
  releaseSilentWorkers: typeof releaseSilentWorkers;
  hasQueued: typeof hasQueued;
  hasHead: typeof hasHead;
  dueReading: typeof dueReading;
  nextAttemptAt: typeof nextAttemptAt;
}

export const book: QueueBook = {
  firstAttempt,
  enqueueManual,
  stopEndpoints,
  unparkAll,
  holdEndpoint,
  releaseHeld,
  releaseSilentWorkers,
  hasQueued,
  hasHead,
  dueReading,
  nextAttemptAt,
};

/** The queue for the context's database. */
export function openQueue(
  ctx: StoreContext,
  deps: QueueDeps,
  policy: QueuePolicy,
  onQueued: () => void = () => {},
  /** PostgreSQL: the pool of ctx.db's connections, for the queue's prepared statements. */
  pool: pg.Pool | null = null,
): Queue {
  if (ctx.dialect === 'postgres') {
    if (!pool) throw new Error('the PostgreSQL queue needs the pool of its connections');
    return new PostgresQueue(ctx, deps, policy, onQueued, pool);
  }
  return new SqliteQueue(ctx, deps, policy, onQueued);
}
