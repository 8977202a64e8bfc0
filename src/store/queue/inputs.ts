import type { TestNetwork } from '../../config.js';
import { sql } from 'kysely';
import type { EndpointStatus } from '../../domain/endpoint-state.js';
import type { Executor } from '../common.js';
import type { Database, DeliveryRow, EndpointRow, MessageRow, SecretColumns } from '../schema.js';
import type { SigningSecrets } from '../../domain/secrets.js';
import type { AttemptInput, ClaimedTask, EndpointAccess } from './types.js';
import type { AuthSettings, OAuth2Client } from '../../domain/endpoint-auth.js';
import type { ReceiverTls } from '../../domain/pem.js';
import { markedNames } from '../../domain/headers.js';
import { scheduleMs } from '../../domain/retry-schedule.js';
import { type Destination, storedDestination, urlWithPassword } from '../../domain/destinations.js';

// What sending an attempt needs, read the same way by both drivers: the input columns, a row of them
// turned into an AttemptInput, and the endpoint's signing secrets opened once per read.

/**
 * Payloads longer than this many bytes are left out of what a claim loads. A worker holds what it claims
 * until a slot is free (up to four waves of HERALD_CONCURRENCY, 1,024 attempts by default), which with
 * 512 KB payloads would be half a gigabyte; such an attempt loads its input when it starts instead.
 */
export const CLAIMED_PAYLOAD_LIMIT = 16 * 1024;

/**
 * The columns sending an attempt reads, by table: the one definition from which the load's two reads
 * (loadInputs), the endpoints' reload (loadEndpoints), the PostgreSQL claim's SQL
 * (postgres-statements.ts) and the row type (LoadedRow) are made. Ids come aliased (`d_id`, `m_id`,
 * `e_id`) because a claimed attempt has an `id` of its own, and an endpoint's status as `endpoint_status`.
 */
export const SEND_COLUMNS = {
  deliveries: ['message_id', 'livemode'],
  messages: ['event_type', 'created_at', 'traceparent', 'tracestate'],
  endpoints: [
    'url',
    'public_only',
    'secret_sealed',
    'previous_secret_sealed',
    'previous_valid_until',
    'earlier_secrets_sealed',
    'earlier_valid_until',
    'headers_sealed',
    'rate_limit',
    'ordering',
    'svix_headers',
    'tls_client_cert',
    'tls_client_key_sealed',
    'tls_ca',
    'auth',
    'auth_secret_sealed',
    'destination',
    'destination_sealed',
    'transformation_enabled',
    'transformation_updated_at',
    'retry_schedule',
    'circuit',
    'circuit_state',
    'circuit_open_until',
    'circuit_probe_until',
    'circuit_window_start',
  ],
} as const satisfies { [T in 'deliveries' | 'messages' | 'endpoints']: readonly (keyof Database[T])[] };

type SendColumn<T extends keyof typeof SEND_COLUMNS> = (typeof SEND_COLUMNS)[T][number];

/** SEND_COLUMNS as SQL text, for statements written by hand: `alias.column`, comma separated. */
export function sendColumnsSql(alias: Record<keyof typeof SEND_COLUMNS, string>): string {
  return (Object.keys(SEND_COLUMNS) as (keyof typeof SEND_COLUMNS)[])
    .flatMap((table) => SEND_COLUMNS[table].map((c) => `${alias[table]}.${c}`))
    .join(', ');
}

type Nullable<T> = { [K in keyof T]: T[K] | null };

/**
 * A row of what sending an attempt reads, as PostgreSQL's claim reads it (nullable where a left join may
 * find nothing); loadInputs reads its two parts apart (DeliveryInputRow, EndpointInputRow).
 */
export type LoadedRow = Nullable<
  Pick<DeliveryRow, SendColumn<'deliveries'>> &
    Pick<MessageRow, SendColumn<'messages'>> &
    Pick<EndpointRow, SendColumn<'endpoints'>> & {
      d_id: string;
      m_id: string;
      e_id: string;
      endpoint_status: EndpointStatus;
      body: string;
      payload_id: string;
    }
>;

/** The part of a LoadedRow that is the delivery's, its message's and its payload's. */
type DeliveryInputRow = Pick<
  LoadedRow,
  'd_id' | 'm_id' | SendColumn<'deliveries'> | SendColumn<'messages'> | 'body' | 'payload_id'
>;

/** The part of a LoadedRow that is the endpoint's (its livemode is the delivery's: one environment). */
type EndpointInputRow = Pick<LoadedRow, 'e_id' | 'endpoint_status' | 'livemode' | SendColumn<'endpoints'>>;

/**
 * loadInputs' first read: the delivery's, its message's and its payload's SEND_COLUMNS, and its endpoint's
 * id. With `payloadLimit`, a longer payload is left out: its body is null while `payload_id` says it exists
 * (`octet_length` reads the stored length, not the text).
 */
function deliveryInputColumns(payloadLimit: number | null) {
  const body =
    payloadLimit === null
      ? sql<string | null>`payloads.body`
      : sql<string | null>`case when octet_length(payloads.body) <= ${payloadLimit} then payloads.body end`;
  return [
    'deliveries.id as d_id',
    ...SEND_COLUMNS.deliveries.map((c) => `deliveries.${c}` as const),
    'deliveries.endpoint_id',
    'messages.id as m_id',
    ...SEND_COLUMNS.messages.map((c) => `messages.${c}` as const),
    body.as('body'),
    'payloads.message_id as payload_id',
  ] as const;
}

/** The columns of an endpoint's TLS settings and OAuth2 client. */
type EnterpriseColumns = 'tls_client_cert' | 'tls_client_key_sealed' | 'tls_ca' | 'auth' | 'auth_secret_sealed';

/** The columns of an endpoint's destination (src/domain/destinations.ts): null, null for an HTTP endpoint. */
type DestinationColumns = 'destination' | 'destination_sealed';

/** An attempt's TLS settings and OAuth2 client, opened. */
interface Enterprise {
  tls: ReceiverTls | null;
  auth: OAuth2Client | null;
}
const NO_ENTERPRISE: Enterprise = { tls: null, auth: null };

/** An endpoint's own headers, opened, and the lowercase names it marks sensitive. */
interface OpenedHeaders {
  headers: Record<string, string>;
  marked: ReadonlySet<string>;
}
const NO_MARKS: ReadonlySet<string> = new Set();
const NONE: OpenedHeaders = { headers: {}, marked: NO_MARKS };

/** An attempt's endpoint as sending reads it. */
type AttemptEndpoint = NonNullable<AttemptInput['endpoint']>;

/**
 * Turns rows read at `now` into inputs. What it opens and builds is memoized for the reader's life (a load,
 * or a claim and the inputs it reads apart, moments later): the tasks of a claim mostly share a few
 * endpoints, opening a sealed secret is a decryption, and the tasks of one endpoint share one endpoint
 * object, as the reader first saw it (a claim handed to the worker's main thread carries it once).
 */
export class InputReader {
  private readonly built = new Map<string, AttemptEndpoint>();
  private readonly secrets = new Map<string, SigningSecrets | null>();
  private readonly headers = new Map<string, OpenedHeaders | null>();
  private readonly enterprise = new Map<string, Enterprise | null>();
  private readonly destinations = new Map<string, Destination | null>();
  private readonly schedules = new Map<string, number[]>();

  constructor(
    private readonly endpoints: EndpointAccess,
    private readonly now: number,
    private readonly testNetwork: TestNetwork,
  ) {}

  /**
   * The task's input, or null when its delivery or its message is gone (retention, or a deleted
   * application); `endpoint` is null when the endpoint was deleted.
   */
  toInput(task: ClaimedTask, row: DeliveryInputRow, endpoint: AttemptEndpoint | null): AttemptInput | null {
    if (row.d_id === null || row.m_id === null) return null;
    return {
      task,
      delivery: {
        id: row.d_id,
        messageId: row.message_id!,
        eventType: row.event_type!,
        createdAt: row.created_at!,
        livemode: Boolean(row.livemode),
        traceparent: row.traceparent,
        tracestate: row.tracestate,
      },
      endpoint,
      payloadJson: row.body ?? null,
      payloadLater: row.body === null && row.payload_id !== null,
    };
  }

  /** The endpoint a row read (null: deleted), built from the first of its rows this reader saw. */
  endpointOf(row: EndpointInputRow): AttemptEndpoint | null {
    if (row.e_id === null) return null;
    let endpoint = this.built.get(row.e_id);
    if (endpoint === undefined) {
      endpoint = this.endpointInput(row.e_id, row.endpoint_status!, row);
      this.built.set(row.e_id, endpoint);
    }
    return endpoint;
  }

  /** An attempt's endpoint from the row a claim, a load or endpointsNow read (one place for its rules). */
  private endpointInput(id: string, status: EndpointStatus, row: EndpointInputRow): AttemptEndpoint {
    // Live endpoints, those whose URL a portal customer chose, and every one under HERALD_TEST_NETWORK=public
    // reach public addresses only.
    const publicOnly = Boolean(row.livemode) || Boolean(row.public_only) || this.testNetwork === 'public';
    const headers = this.headersOf(row.headers_sealed);
    const enterprise = this.enterpriseOf(row);
    const destination = this.destinationOf(row);
    // Headers, a client key, a client secret or a destination's secrets that do not open here make the
    // endpoint unsendable here, as signing secrets that do not open do.
    const secrets = headers === null || enterprise === null || destination === null ? null : this.secretsOf(row);
    return {
      id,
      url: row.url!,
      publicOnly,
      status,
      secrets,
      headers: headers?.headers ?? {},
      sensitiveHeaders: headers?.marked ?? NO_MARKS,
      rateLimit: row.rate_limit === null ? null : Number(row.rate_limit),
      fifo: row.ordering === 'fifo',
      svixHeaders: Boolean(row.svix_headers),
      tls: enterprise?.tls ?? null,
      auth: enterprise?.auth ?? null,
      destination: destination ?? null,
      transformationVersion:
        row.transformation_enabled && row.transformation_updated_at !== null
          ? Number(row.transformation_updated_at)
          : null,
      retryScheduleMs: this.scheduleOf(row.retry_schedule),
      circuit: {
        stored: row.circuit,
        state: row.circuit_state ?? 'closed',
        openUntil: row.circuit_open_until === null ? null : Number(row.circuit_open_until),
        probeUntil: row.circuit_probe_until === null ? null : Number(row.circuit_probe_until),
        windowStart: row.circuit_window_start === null ? null : Number(row.circuit_window_start),
      },
    };
  }

  /** The endpoint's own retry schedule in ms (memoized by its stored text); null: the service's. */
  private scheduleOf(stored: string | null): number[] | null {
    if (stored === null) return null;
    let schedule = this.schedules.get(stored);
    if (schedule === undefined) {
      schedule = scheduleMs(stored)!;
      this.schedules.set(stored, schedule);
    }
    return schedule;
  }

  /**
   * The endpoint's destination with its secrets opened: undefined for an HTTP endpoint, null when
   * its secrets do not open here (memoized by the stored texts).
   */
  private destinationOf(row: Pick<LoadedRow, DestinationColumns | 'url'>): Destination | null | undefined {
    if (row.destination === null) return undefined;
    const key = `${row.url}|${row.destination}|${row.destination_sealed}`;
    let opened = this.destinations.get(key);
    if (opened === undefined) {
      try {
        const secrets = this.endpoints.destinationSecrets(row);
        const { type, appId, settings } = storedDestination(row.destination)!;
        opened = { type, appId, url: urlWithPassword(row.url!, secrets.password), settings, secrets };
      } catch {
        opened = null;
      }
      this.destinations.set(key, opened);
    }
    return opened;
  }

  /**
   * The endpoint's TLS settings and OAuth2 client with their key and secret opened, or null when either
   * does not open here (memoized by their sealed texts).
   */
  private enterpriseOf(row: Pick<LoadedRow, EnterpriseColumns>): Enterprise | null {
    if (row.tls_client_cert === null && row.tls_ca === null && row.auth === null) return NO_ENTERPRISE;
    const key = `${row.tls_client_key_sealed}|${row.auth_secret_sealed}|${row.auth}`;
    let opened = this.enterprise.get(key);
    if (opened === undefined) {
      try {
        const clientKey = this.endpoints.tlsKey(row);
        const secret = this.endpoints.authSecret(row);
        const settings = row.auth === null ? null : (JSON.parse(row.auth) as AuthSettings);
        opened = {
          tls:
            row.tls_client_cert === null && row.tls_ca === null
              ? null
              : {
                  ...(row.tls_client_cert === null ? {} : { cert: row.tls_client_cert }),
                  ...(clientKey === null ? {} : { key: clientKey }),
                  ...(row.tls_ca === null ? {} : { ca: row.tls_ca }),
                },
          auth:
            settings === null
              ? null
              : {
                  tokenUrl: settings.tokenUrl,
                  clientId: settings.clientId,
                  clientSecret: secret ?? '',
                  scope: settings.scope,
                  audience: settings.audience,
                  clientAuth: settings.clientAuth,
                },
        };
      } catch {
        opened = null;
      }
      this.enterprise.set(key, opened);
    }
    return opened;
  }

  /**
   * The endpoint's own headers and its marked names, or null when they do not open here (memoized by
   * their sealed text).
   */
  private headersOf(sealed: string | null): OpenedHeaders | null {
    if (sealed === null) return NONE;
    let headers = this.headers.get(sealed);
    if (headers === undefined) {
      try {
        const set = this.endpoints.headers({ headers_sealed: sealed });
        headers = { headers: set.headers, marked: markedNames(set) };
      } catch {
        headers = null;
      }
      this.headers.set(sealed, headers);
    }
    return headers;
  }

  /**
   * The endpoint's signing secrets, or null when they do not open here (sealed under another
   * HERALD_SECRET_KEY): that endpoint's attempts wait, and the rest of the claim goes on (worker.ts).
   */
  private secretsOf(row: Pick<LoadedRow, keyof SecretColumns>): SigningSecrets | null {
    // Every rotation seals a new current secret (a fresh nonce each time), so it names the whole set.
    let secrets = this.secrets.get(row.secret_sealed!);
    if (secrets === undefined) {
      try {
        secrets = this.endpoints.signingSecrets({ ...row, secret_sealed: row.secret_sealed! }, this.now);
      } catch {
        secrets = null;
      }
      this.secrets.set(row.secret_sealed!, secrets);
    }
    return secrets;
  }
}

/** The inputs of `tasks` (in their order); a task whose delivery is gone has none, and the worker drops it. */
export async function loadInputs(
  db: Executor,
  reader: InputReader,
  tasks: ClaimedTask[],
  payloadLimit: number | null,
): Promise<AttemptInput[]> {
  if (tasks.length === 0) return [];
  // Two reads: the deliveries with their messages and payloads, then each of their endpoints once (a
  // claim's tasks mostly share one).
  const rows = await db
    .selectFrom('deliveries')
    .innerJoin('messages', 'messages.id', 'deliveries.message_id')
    .leftJoin('payloads', 'payloads.message_id', 'deliveries.message_id')
    .select(deliveryInputColumns(payloadLimit))
    .where(
      'deliveries.id',
      'in',
      tasks.map((t) => t.delivery_id),
    )
    .execute();
  const endpointIds = [...new Set(rows.map((row) => row.endpoint_id))];
  const endpoints = new Map((await loadEndpoints(db, reader, endpointIds)).map((endpoint) => [endpoint.id, endpoint]));
  const byId = new Map(rows.map((row) => [row.d_id, row]));
  return tasks.flatMap((task) => {
    const row = byId.get(task.delivery_id);
    const input = row && reader.toInput(task, row, endpoints.get(row.endpoint_id) ?? null);
    return input ? [input] : [];
  });
}

/** The endpoints as they are now (url, status, signing secrets); one deleted meanwhile is left out. */
export async function loadEndpoints(db: Executor, reader: InputReader, ids: string[]): Promise<AttemptEndpoint[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('endpoints')
    .select(['id as e_id', 'livemode', 'status as endpoint_status', ...SEND_COLUMNS.endpoints])
    .where('id', 'in', ids)
    .execute();
  return rows.flatMap((row) => reader.endpointOf(row) ?? []);
}
