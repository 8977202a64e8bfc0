import type { Role } from '../domain/access.js';
import type { ActorType } from '../domain/audit.js';
import type { CircuitState } from '../domain/circuit.js';
import type { EndpointStatus } from '../domain/endpoint-state.js';
import type { Ordering } from '../domain/fifo.js';
import type { QueueColumns } from '../domain/queue-slot.js';
import type { SignatureType } from '../domain/secrets.js';
import type { EndpointType } from '../domain/destinations.js';
import type {
  AttemptStatus,
  AttemptTrigger,
  BackgroundTaskKind,
  BackgroundTaskStatus,
  DeliveryStatus,
} from '../domain/states.js';

// Table shapes shared by both stores. Times are integer milliseconds since the epoch and ids are made in
// JavaScript, so no query depends on a dialect's clock or id functions. Booleans are 0/1 integers and
// lists are JSON text, which read the same on SQLite and PostgreSQL.

export interface OrganizationRow {
  id: string;
  name: string;
  plan: string;
  created_at: number;
}

export interface ApiKeyRow {
  id: string;
  org_id: string;
  livemode: number;
  name: string;
  key_hash: string;
  created_at: number;
  revoked_at: number | null;
  /** What the key may do (src/domain/access.ts). */
  role: Role;
  /** The applications the key is limited to, a JSON list of `app_…` ids; null: every application. */
  app_ids: string | null;
  /** When the key stops working; null: never. */
  expires_at: number | null;
}

/** One change of configuration (src/store/audit-log.ts). */
export interface AuditEntryRow {
  id: string;
  org_id: string;
  livemode: number;
  actor_type: ActorType;
  actor_id: string | null;
  /** `<resource>.<verb>`, such as `endpoint.updated`. */
  action: string;
  resource_type: string;
  resource_id: string;
  /** JSON: each changed field's [before, after], secrets redacted. */
  changes: string;
  request_id: string | null;
  created_at: number;
}

export interface EventTypeRow {
  org_id: string;
  livemode: number;
  name: string;
  description: string;
  version: number;
  example_json: string;
  /** The entry's JSON Schema (draft 2020-12) as JSON text; null when payloads are free-form. */
  schema_json: string | null;
  /** 1: left out of lists unless asked for; messages of it are still accepted. */
  archived: number;
  /** 1: marked as on its way out (shown, not enforced). */
  deprecated: number;
  group_name: string | null;
  created_at: number;
  updated_at: number;
}

export interface ApplicationRow {
  id: string;
  org_id: string;
  livemode: number;
  name: string;
  uid: string | null;
  /** SHA-256 (hex) of the application's portal token; the token itself is shown once. */
  portal_token_hash: string;
  /** 1 for the environment's hidden application of operational endpoints (src/store/operational.ts). */
  operational: number;
  /** A JSON object of strings, as the Svix-compatible surface takes and shows it. */
  metadata: string;
  created_at: number;
  updated_at: number;
}

export interface EndpointRow {
  id: string;
  org_id: string;
  livemode: number;
  app_id: string;
  url: string;
  description: string;
  /** JSON array of event type names; empty means every event type. */
  event_types: string;
  status: EndpointStatus;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_valid_until: number | null;
  /** Secrets rotated out before the previous one, sealed as a JSON list of {secret, validUntil}, newest first. */
  earlier_secrets_sealed: string | null;
  /** The latest validUntil in earlier_secrets_sealed. */
  earlier_valid_until: number | null;
  /** When the current run of failed attempts began; null while the endpoint succeeds. */
  failing_since: number | null;
  /** When a delivery used up its attempts in the current run of failures; null outside one or before. */
  exhausted_at: number | null;
  /** 1 when the URL was chosen in a customer portal: deliveries reach public addresses only, in Test too. */
  public_only: number;
  /** The endpoint's own headers, a JSON object sealed with HERALD_SECRET_KEY; null: none. */
  headers_sealed: string | null;
  /** `hmac` or `ed25519`, fixed at creation. */
  signature_type: SignatureType;
  /** The current Ed25519 key's public form (`whpk_…`); null for HMAC. */
  public_key: string | null;
  /** Most requests a second to the endpoint, across every worker; null: no limit. */
  rate_limit: number | null;
  ordering: Ordering;
  /** 1 for an operational endpoint: it receives Herald's own events and no route but its own shows it. */
  operational: number;
  /** The caller's stable id for the endpoint, unique within its application; null: none. */
  uid: string | null;
  /** JSON array of channel names: it receives only messages sharing one; null: every message. */
  channels: string | null;
  /** Its content filter, a MongoDB-style query as JSON (src/domain/content-filter.ts); null: none. */
  filter: string | null;
  /** A JSON object of strings, as the Svix-compatible surface takes and shows it. */
  metadata: string;
  /** 1: requests carry the svix-* signature headers beside the webhook-* ones (set through the Svix surface). */
  svix_headers: number;
  /** The client certificate (PEM, with its chain) for receivers that demand mutual TLS; null: none. */
  tls_client_cert: string | null;
  /** Its private key (PEM), sealed with HERALD_SECRET_KEY; null: none. */
  tls_client_key_sealed: string | null;
  /** CA certificates (PEM) that replace the default roots for the receiver's certificate; null: the defaults. */
  tls_ca: string | null;
  /** The client certificate's notAfter; null without one. */
  tls_client_cert_not_after: number | null;
  /** The OAuth2 client's settings as JSON (AuthSettings, src/domain/endpoint-auth.ts), secret apart; null: none. */
  auth: string | null;
  /** The OAuth2 client secret, sealed with HERALD_SECRET_KEY. */
  auth_secret_sealed: string | null;
  /** `http`, or the kind of broker or bucket its messages are published to (src/domain/destinations.ts). */
  type: EndpointType;
  /** A destination's settings as JSON ({settings, sealed: the names of the secrets stored}); null for http. */
  destination: string | null;
  /** A destination's secrets (DestinationSecrets) as JSON, sealed with HERALD_SECRET_KEY; null: none. */
  destination_sealed: string | null;
  /** Its transformation's code (src/domain/transformations.ts); null: none. */
  transformation_code: string | null;
  /** 1: the transformation runs on every attempt (when there is code). */
  transformation_enabled: number;
  /** When the transformation was last written (its code's version); null: never. */
  transformation_updated_at: number | null;
  /** Its own retry schedule, a JSON list of durations as given (src/domain/retry-schedule.ts); null: the service's. */
  retry_schedule: string | null;
  /** Its circuit breaker's settings as given (JSON of CircuitInput, src/domain/circuit.ts); null: the service's. */
  circuit: string | null;
  circuit_state: CircuitState;
  /** While open: when the cooldown ends. */
  circuit_open_until: number | null;
  /** The cooldown last used (a failed probe doubles it); null while closed. */
  circuit_cooldown_ms: number | null;
  /** While half open: the probe is its worker's until then. */
  circuit_probe_until: number | null;
  /** The current window's start and counts (from its first failure on); null: no window. */
  circuit_window_start: number | null;
  circuit_window_attempts: number;
  circuit_window_failures: number;
  created_at: number;
  updated_at: number;
}

/** The columns an endpoint's signing secrets are read from. */
export type SecretColumns = Pick<
  EndpointRow,
  'secret_sealed' | 'previous_secret_sealed' | 'previous_valid_until' | 'earlier_secrets_sealed' | 'earlier_valid_until'
>;

export interface MessageRow {
  id: string;
  org_id: string;
  livemode: number;
  app_id: string;
  event_type: string;
  /** The sender's id for the message, unique in its environment; null: none given. */
  event_id: string | null;
  /** JSON array of channel names (routing: src/domain/envelope.ts); null: none. */
  channels: string | null;
  /** JSON array of tag names (labels for lists); null: none. */
  tags: string | null;
  /** The W3C `traceparent` its attempts descend from, and the caller's `tracestate`; null: none given. */
  traceparent: string | null;
  tracestate: string | null;
  /** When its deliveries' first attempts are due, if later than its creation; null: at once. */
  deliver_at: number | null;
  created_at: number;
}

export interface PayloadRow {
  message_id: string;
  /** The payload object as JSON text, exactly as it goes into `data` of the outbound body. */
  body: string;
  created_at: number;
  /** When the payload goes, if sooner than the retention period (and no attempt of it waits); null: with it. */
  expires_at: number | null;
}

/** A message's event id, unique in its environment (kept apart: partitioned `messages` holds no such index). */
export interface MessageEventIdRow {
  org_id: string;
  livemode: number;
  event_id: string;
  message_id: string;
}

export interface IdempotencyRow {
  org_id: string;
  livemode: number;
  key: string;
  message_id: string;
  /** JSON array of the delivery ids the original emit returned. */
  delivery_ids: string;
  expires_at: number;
}

/** A delivery's own columns, its queue apart. */
export interface DeliveryCounters {
  id: string;
  org_id: string;
  livemode: number;
  app_id: string;
  message_id: string;
  endpoint_id: string;
  status: DeliveryStatus;
  /** Attempts made and recorded. */
  attempt_count: number;
  /** Attempt numbers handed out so far (made or queued); the next attempt gets attempt_seq + 1. */
  attempt_seq: number;
  /** How many attempts of the retry schedule have been used. */
  schedule_step: number;
  created_at: number;
  updated_at: number;
}

/**
 * The delivery's first attempt, when it succeeded under its worker's lease: recorded on the delivery row
 * instead of a row of `attempts` (src/domain/outcome-plan.ts, placeAttempts), and read as attempt 1 through
 * the `attempt_log` view. All null otherwise.
 */
export interface FirstAttemptColumns {
  first_attempt_id: string | null;
  first_attempt_at: number | null;
  first_duration_ms: number | null;
  first_response_status: number | null;
  first_response_body: string | null;
  first_request_headers: string | null;
  first_response_headers: string | null;
  /** The request its transformation made, as JSON {method, url, body}; null: the plain request. */
  first_request: string | null;
}

/**
 * A delivery row: its counters and status, its queue (src/domain/queue-slot.ts): the attempt due next, the
 * lease of the worker making it, and the rare attempts waiting behind it; and its first attempt when that
 * one delivered.
 */
export interface DeliveryRow extends DeliveryCounters, QueueColumns, FirstAttemptColumns {}

/** A delivery as an emit inserts it: no attempt made yet. */
export type NewDeliveryRow = DeliveryCounters & QueueColumns;

/** Work run in the background in batches (src/store/background-tasks.ts). */
export interface BackgroundTaskRow {
  id: string;
  org_id: string;
  livemode: number;
  kind: BackgroundTaskKind;
  /** `running`, `finished` or `failed`. */
  status: BackgroundTaskStatus;
  /** The task's input, as JSON. */
  params: string;
  /** What the task works on (a recovery's endpoint): one running task of a kind per subject. */
  subject_id: string | null;
  /** Where the next batch starts (null: at the beginning). */
  cursor: string | null;
  /** Deliveries given a new attempt so far. */
  enqueued: number;
  /** How many the task has to go through, when known at its start (a bulk replay's matches); null: unknown. */
  total: number | null;
  /** Batches that failed in a row. */
  failures: number;
  lease_owner: string | null;
  lease_until: number | null;
  created_at: number;
  updated_at: number;
}

/** A rate-limited endpoint's theoretical arrival time (src/domain/rate.ts; the queue's takeStarts). */
export interface EndpointRateRow {
  endpoint_id: string;
  /** When its next start may be, in microseconds since the epoch. */
  tat_us: number;
}

/** A portal link made on request: it opens its application's portal until `expires_at`. */
export interface PortalLinkRow {
  /** SHA-256 (hex) of the link's token. */
  token_hash: string;
  app_id: string;
  expires_at: number;
  created_at: number;
}

/** The answer to a Svix-surface POST, kept by its idempotency key (src/store/request-replays.ts). */
export interface RequestReplayRow {
  org_id: string;
  livemode: number;
  key: string;
  /** Method and path of the first request: a repeat of the key with another request is refused. */
  request: string;
  /** The answer's HTTP status; 0 while the first request is being answered. */
  status: number;
  body: string | null;
  expires_at: number;
}

/** A running delivery worker and its last heartbeat (src/store/workers.ts). */
export interface WorkerRow {
  id: string;
  started_at: number;
  beat_at: number;
}

/**
 * An operational event of outcomes recorded in one PostgreSQL statement, until it is raised
 * (src/store/operational.ts, raiseStoredEvents). `body` is a CausedEvent as JSON.
 */
export interface OutcomeEventRow {
  id: string;
  body: string;
  created_at: number;
}

export interface AttemptRow {
  id: string;
  delivery_id: string;
  /** The delivery's endpoint, for attempts by endpoint and hour; null only on a row older than the column whose delivery was gone. */
  endpoint_id: string | null;
  attempt_number: number;
  trigger: AttemptTrigger;
  status: AttemptStatus;
  response_status: number | null;
  response_body: string | null;
  /** The headers sent, secrets redacted, one `name: value` line each (src/domain/headers.ts); null on rows older than the column. */
  request_headers: string | null;
  /** The answer's headers in the same form, credentials redacted; null: no answer, or a row older than the column. */
  response_headers: string | null;
  error: string | null;
  duration_ms: number;
  created_at: number;
  /** The request a transformation made, as JSON (TransformedAttemptRequest); null: the plain request. */
  request: string | null;
}

export interface Database {
  organizations: OrganizationRow;
  api_keys: ApiKeyRow;
  audit_log: AuditEntryRow;
  event_types: EventTypeRow;
  applications: ApplicationRow;
  endpoints: EndpointRow;
  messages: MessageRow;
  payloads: PayloadRow;
  message_event_ids: MessageEventIdRow;
  idempotency_keys: IdempotencyRow;
  deliveries: DeliveryRow;
  attempts: AttemptRow;
  /** A view: every attempt, from `attempts` and from the deliveries' first attempts (migration 021). Read only. */
  attempt_log: AttemptRow;
  workers: WorkerRow;
  outcome_events: OutcomeEventRow;
  endpoint_rates: EndpointRateRow;
  background_tasks: BackgroundTaskRow;
  portal_links: PortalLinkRow;
  request_replays: RequestReplayRow;
}

/** The rows the hot paths insert by hand (src/store/insert-rows.ts), by table: columns left out are null. */
export interface InsertedRows extends Omit<Database, 'deliveries' | 'attempt_log'> {
  deliveries: NewDeliveryRow;
}
