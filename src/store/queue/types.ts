import type { CircuitRead } from '../../domain/circuit.js';
import type { TestNetwork } from '../../config.js';
import type { EndpointHealth, EndpointStatus } from '../../domain/endpoint-state.js';
import type { DeliveryState, OutcomeResult, OutcomeTask } from '../../domain/outcome-plan.js';
import type { OAuth2Client } from '../../domain/endpoint-auth.js';
import type { ReceiverTls } from '../../domain/pem.js';
import type { Destination, DestinationSecrets } from '../../domain/destinations.js';
import type { SigningSecrets } from '../../domain/secrets.js';
import type { EndpointHeaders } from '../../domain/headers.js';
import type { CausedEvent } from '../../domain/operational.js';
import type { Executor } from '../common.js';
import type { EndpointRow, SecretColumns } from '../schema.js';

// The types of the queue's port (src/store/queue.ts, which exports them to the worker) that its drivers
// take and give: here, so that the drivers need nothing of the port that opens them.

/**
 * A claimed attempt: the head of its delivery's queue, with the lease end the claim wrote (the attempt is
 * ours while the delivery's lease is unchanged).
 */
export type ClaimedTask = OutcomeTask;

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
    /** The lowercase names of `headers` the endpoint marks sensitive: its attempts keep them redacted. */
    sensitiveHeaders?: ReadonlySet<string>;
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
    /** A broker or bucket its messages are published to, secrets opened (absent or null: an HTTP receiver). */
    destination?: Destination | null;
    /**
     * Its enabled transformation's version (when it was written; its code is read apart, once per version);
     * absent or null: none runs.
     */
    transformationVersion?: number | null;
    /** Its own retry schedule in ms (absent or null: the service's). */
    retryScheduleMs?: readonly number[] | null;
    /** Its circuit breaker as the claim read it (absent: closed, the service's settings). */
    circuit?: EndpointCircuitRead;
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

/** An endpoint's circuit as a claim reads it (src/domain/circuit.ts): its stored settings and its state. */
export interface EndpointCircuitRead extends CircuitRead {
  /** Its `circuit` column: settings as given, null for the service's. */
  stored: string | null;
  /** The current window's start (null: no window is counted). */
  windowStart: number | null;
}

/** What a claim read of an attempt's delivery (its counters and queue, as the claim left it) and endpoint (its health). */
export interface ClaimedState {
  delivery: DeliveryState;
  endpoint: EndpointHealth | null;
}

/** What sending an attempt gave (the planner's OutcomeResult). */
export type AttemptResult = OutcomeResult;

/**
 * An outcome to record: what recording reads of the attempt's input as claimed (its task, its endpoint's
 * id, status and delivery rules, and the state PostgreSQL's claim read) and what sending it gave.
 */
export type Recorded = { input: RecordedInput; result: AttemptResult };
export type RecordedInput = Pick<AttemptInput, 'task' | 'claimedState'> & {
  endpoint: Pick<NonNullable<AttemptInput['endpoint']>, 'id' | 'status' | 'fifo' | 'retryScheduleMs'> | null;
};

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

/**
 * What the queue needs of the endpoints' module (src/store/endpoints.ts, Endpoints): an endpoint's sealed
 * settings opened, and its health written with what that implies (a disabled endpoint's queue stopped).
 */
export interface EndpointAccess {
  signingSecrets(row: SecretColumns, now: number): SigningSecrets;
  headers(row: Pick<EndpointRow, 'headers_sealed'>): EndpointHeaders;
  tlsKey(row: Pick<EndpointRow, 'tls_client_key_sealed'>): string | null;
  authSecret(row: Pick<EndpointRow, 'auth_secret_sealed'>): string | null;
  destinationSecrets(row: Pick<EndpointRow, 'destination_sealed'>): DestinationSecrets;
  recordHealth(db: Executor, id: string, health: EndpointHealth, now: number): Promise<void>;
}

/** Where the operational events of outcomes go (src/store/operational.ts, outcomeEventSink). */
export interface OutcomeEventSink {
  /**
   * Raises these events in the transaction recording their outcomes; returns how many attempts of
   * operational webhooks they queued.
   */
  raise(trx: Executor, caused: readonly CausedEvent[], now: number): Promise<number>;
  /** Raises the events a one-statement batch stored (outcome_events); the same count. */
  raiseStored(now: number): Promise<number>;
}

/** What a queue is opened with besides its database and policy. */
export interface QueueDeps {
  endpoints: EndpointAccess;
  events: OutcomeEventSink;
}
