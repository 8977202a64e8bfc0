import type pg from 'pg';
import type { StoreContext } from './common.js';
import type { Endpoints } from './endpoints.js';
import type { QueueDriver } from './queue/driver.js';
import { PostgresQueue } from './queue/postgres.js';
import { SqliteQueue } from './queue/sqlite.js';
import type { QueuePolicy } from './queue/types.js';

// The worker's side of the store: claim due attempts under a lease, load what sending needs, and record
// each outcome with its consequences (next attempt, delivery status, endpoint health) in one transaction.
// This module is the port the worker uses; a driver per database implements it (src/store/queue/), and
// what an outcome does is decided by the planner (src/domain/outcome-plan.ts).

export type { OutcomeEvent } from '../domain/outcome-plan.js';
export { CLAIMED_PAYLOAD_LIMIT } from './queue/inputs.js';
export type {
  AttemptInput,
  AttemptResult,
  ClaimedState,
  ClaimedTask,
  ClaimScope,
  QueuePolicy,
} from './queue/types.js';

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

/** The queue for the context's database. */
export function openQueue(
  ctx: StoreContext,
  endpoints: Endpoints,
  policy: QueuePolicy,
  onQueued: () => void = () => {},
  /** PostgreSQL: the pool of ctx.db's connections, for the queue's prepared statements. */
  pool: pg.Pool | null = null,
): Queue {
  if (ctx.dialect === 'postgres') {
    if (!pool) throw new Error('the PostgreSQL queue needs the pool of its connections');
    return new PostgresQueue(ctx, endpoints, policy, onQueued, pool);
  }
  return new SqliteQueue(ctx, endpoints, policy, onQueued);
}
