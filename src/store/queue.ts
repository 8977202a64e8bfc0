import type pg from 'pg';
import type { TestNetwork } from '../config.js';
import type { EndpointHealth, EndpointStatus } from '../domain/endpoint-state.js';
import type { DeliveryState, OutcomeResult } from '../domain/outcome-plan.js';
import type { OAuth2Client } from '../domain/endpoint-auth.js';
import type { ReceiverTls } from '../domain/pem.js';
import type { StoreContext } from './common.js';
import type { Endpoints, SigningSecrets } from './endpoints.js';
import type { QueueDriver } from './queue/driver.js';
import { PostgresQueue } from './queue/postgres.js';
import { SqliteQueue } from './queue/sqlite.js';
import type { TaskRow } from './schema.js';

// The worker's side of the store: claim due attempts under a lease, load what sending needs, and record
// each outcome with its consequences (next attempt, delivery status, endpoint health) in one transaction.
// This module is the port the worker uses; a driver per database implements it (src/store/queue/), and
// what an outcome does is decided by the planner (src/domain/outcome-plan.ts).

export type { OutcomeEvent } from '../domain/outcome-plan.js';
export { CLAIMED_PAYLOAD_LIMIT } from './queue/inputs.js';

export interface ClaimedTask extends TaskRow {
  /** The lease end written by the claim; completing requires it to be unchanged (we still own the task). */
  leaseUntil: number;
}

export interface AttemptInput {
  task: ClaimedTask;
  /** `traceparent` / `tracestate`: the message's trace context (src/domain/trace-context.ts, messageTrace). */
  delivery: {
    id: string;
    messageId: string;
    eventType: string;
    createdAt: number;
    livemode: boolean;
    traceparent: string | null;
    tracestate: string | null;
  };
  /** `secrets` is null when this process cannot open them (sealed under another HERALD_SECRET_KEY). */
  /** `publicOnly`: its URL may reach public addresses only (a Live endpoint, or one made in a portal). */
  endpoint: {
    id: string;
    url: string;
    publicOnly: boolean;
    status: EndpointStatus;
    secrets: SigningSecrets | null;
    /** The endpoint's own headers, sent with every request (src/domain/headers.ts). */
    headers: Record<string, string>;
    /** Most requests a second across every worker (absent or null: no limit). */
    rateLimit?: number | null;
    /** `fifo`: its deliveries go one at a time, in creation order (src/domain/fifo.ts). */
    fifo?: boolean;
    /** Also sign with the svix-* header names (an endpoint of the Svix-compatible surface). */
    svixHeaders?: boolean;
    /** Its client certificate and key, and the CA bundle for its receiver (absent or null: none). */
    tls?: ReceiverTls | null;
    /** Its OAuth2 client, with the secret opened (absent or null: no token). */
    auth?: OAuth2Client | null;
  } | null;
  /** Null when retention removed the payload, when it comes later (below) and, in the worker, once sent. */
  payloadJson: string | null;
  /** Too large to come with a claim (CLAIMED_PAYLOAD_LIMIT): `load` the input when the attempt starts. */
  payloadLater: boolean;
  /**
   * The delivery's and the endpoint's state when the task was claimed (PostgreSQL's claims read it): the
   * outcome's plan starts from it, and the queue writes that plan only if it still holds.
   */
  claimedState?: ClaimedState;
}

/** What a claim read of an attempt's delivery (its counters and tasks) and endpoint (its health). */
export interface ClaimedState {
  delivery: DeliveryState & { tasks: number };
  endpoint: EndpointHealth | null;
}

/** What sending an attempt gave (the planner's OutcomeResult). */
export type AttemptResult = OutcomeResult;

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

export interface QueuePolicy {
  retryScheduleMs: number[];
  disableAfterMs: number;
  leaseMs: number;
  /** HERALD_TEST_NETWORK: under `public`, Test endpoints' attempts reach public addresses only. */
  testNetwork: TestNetwork;
}

/** Which due attempts a claim may take. */
export interface ClaimScope {
  /** Endpoints left out: those already busy in the worker or left to its top-ups. */
  skip?: readonly string[];
  /** Only this endpoint's attempts (a top-up): read through its own index instead of past everyone's. */
  only?: string;
  /**
   * Only attempts due after this time (the worker's window): the read starts there instead of walking
   * past every due task of the skipped endpoints.
   */
  dueAfter?: number;
}

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
