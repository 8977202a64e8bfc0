import type { Ordering } from '../../domain/fifo.js';
import type { TestNetwork } from '../../config.js';
import { sql } from 'kysely';
import type { EndpointStatus } from '../../domain/endpoint-state.js';
import type { Executor } from '../common.js';
import type { Endpoints, SecretColumns, SigningSecrets } from '../endpoints.js';
import type { AttemptInput, ClaimedTask } from './types.js';
import type { AuthSettings, OAuth2Client } from '../../domain/endpoint-auth.js';
import type { ReceiverTls } from '../../domain/pem.js';
import { markedNames } from '../../domain/headers.js';

// What sending an attempt needs, read the same way by both drivers: the input columns, a row of them
// turned into an AttemptInput, and the endpoint's signing secrets opened once per read.

/**
 * Payloads longer than this many bytes are left out of what a claim loads. A worker holds what it claims
 * until a slot is free (up to four waves of HERALD_CONCURRENCY, 1,024 attempts by default), which with
 * 512 KB payloads would be half a gigabyte; such an attempt loads its input when it starts instead.
 */
export const CLAIMED_PAYLOAD_LIMIT = 16 * 1024;

/** The columns of an attempt's input other than its payload (inputColumns). */
const INPUT_COLUMNS = [
  'deliveries.id as d_id',
  'deliveries.message_id',
  'deliveries.livemode',
  'messages.id as m_id',
  'messages.event_type',
  'messages.created_at',
  'messages.traceparent',
  'messages.tracestate',
  'endpoints.id as e_id',
  'endpoints.url',
  'endpoints.public_only',
  'endpoints.status as endpoint_status',
  'endpoints.secret_sealed',
  'endpoints.previous_secret_sealed',
  'endpoints.previous_valid_until',
  'endpoints.earlier_secrets_sealed',
  'endpoints.earlier_valid_until',
  'endpoints.headers_sealed',
  'endpoints.rate_limit',
  'endpoints.ordering',
  'endpoints.svix_headers',
  'endpoints.tls_client_cert',
  'endpoints.tls_client_key_sealed',
  'endpoints.tls_ca',
  'endpoints.auth',
  'endpoints.auth_secret_sealed',
] as const;

/**
 * What sending an attempt needs: its delivery, message, payload and endpoint. One selection for `load`
 * and `claimLoaded`, so the two cannot drift apart; ids are aliased because the claimed task has an `id`.
 * With `payloadLimit`, a longer payload is left out: its body is null while `payload_id` says it exists
 * (`octet_length` reads the stored length, not the text).
 */
export function inputColumns(payloadLimit: number | null) {
  const body =
    payloadLimit === null
      ? sql<string | null>`payloads.body`
      : sql<string | null>`case when octet_length(payloads.body) <= ${payloadLimit} then payloads.body end`;
  return [...INPUT_COLUMNS, body.as('body'), 'payloads.message_id as payload_id'] as const;
}

/** A row of inputColumns (nullable where a left join may find nothing). */
export interface LoadedRow {
  d_id: string | null;
  message_id: string | null;
  livemode: number | boolean | null;
  m_id: string | null;
  event_type: string | null;
  created_at: number | null;
  traceparent: string | null;
  tracestate: string | null;
  body: string | null;
  payload_id: string | null;
  e_id: string | null;
  url: string | null;
  public_only: number | null;
  endpoint_status: EndpointStatus | null;
  secret_sealed: string | null;
  previous_secret_sealed: string | null;
  previous_valid_until: number | null;
  earlier_secrets_sealed: string | null;
  earlier_valid_until: number | null;
  headers_sealed: string | null;
  rate_limit: number | null;
  ordering: Ordering | null;
  svix_headers: number | null;
  tls_client_cert: string | null;
  tls_client_key_sealed: string | null;
  tls_ca: string | null;
  auth: string | null;
  auth_secret_sealed: string | null;
}

/** The columns of an endpoint's TLS settings and OAuth2 client. */
type EnterpriseColumns = 'tls_client_cert' | 'tls_client_key_sealed' | 'tls_ca' | 'auth' | 'auth_secret_sealed';

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

/**
 * Turns rows read at `now` into inputs. Opened secrets are memoized for the reader's life (one load, one
 * claim): the tasks of a claim mostly share a few endpoints, and opening a sealed secret is a decryption.
 */
export class InputReader {
  private readonly secrets = new Map<string, SigningSecrets | null>();
  private readonly headers = new Map<string, OpenedHeaders | null>();
  private readonly enterprise = new Map<string, Enterprise | null>();

  constructor(
    private readonly endpoints: Endpoints,
    private readonly now: number,
    private readonly testNetwork: TestNetwork,
  ) {}

  /** The task's input, or null when its delivery or its message is gone (retention, or a deleted application). */
  toInput(task: ClaimedTask, row: LoadedRow): AttemptInput | null {
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
      endpoint: row.e_id === null ? null : this.endpointInput(row.e_id, row.endpoint_status!, row),
      payloadJson: row.body ?? null,
      payloadLater: row.body === null && row.payload_id !== null,
    };
  }

  /** An attempt's endpoint from the row a claim, a load or endpointsNow read (one place for its rules). */
  endpointInput(
    id: string,
    status: EndpointStatus,
    row: Pick<
      LoadedRow,
      | keyof SecretColumns
      | 'url'
      | 'livemode'
      | 'public_only'
      | 'headers_sealed'
      | 'rate_limit'
      | 'ordering'
      | 'svix_headers'
      | EnterpriseColumns
    >,
  ): NonNullable<AttemptInput['endpoint']> {
    // Live endpoints, those whose URL a portal customer chose, and every one under HERALD_TEST_NETWORK=public
    // reach public addresses only.
    const publicOnly = Boolean(row.livemode) || Boolean(row.public_only) || this.testNetwork === 'public';
    const headers = this.headersOf(row.headers_sealed);
    const enterprise = this.enterpriseOf(row);
    // Headers, a client key or a client secret that do not open here make the endpoint unsendable here,
    // as signing secrets that do not open do.
    const secrets = headers === null || enterprise === null ? null : this.secretsOf(row);
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
    };
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
  const rows = await db
    .selectFrom('deliveries')
    .innerJoin('messages', 'messages.id', 'deliveries.message_id')
    .leftJoin('payloads', 'payloads.message_id', 'deliveries.message_id')
    .leftJoin('endpoints', 'endpoints.id', 'deliveries.endpoint_id')
    .select(inputColumns(payloadLimit))
    .where(
      'deliveries.id',
      'in',
      tasks.map((t) => t.delivery_id),
    )
    .execute();
  const byId = new Map(rows.map((row) => [row.d_id, row]));
  return tasks.flatMap((task) => {
    const row = byId.get(task.delivery_id);
    const input = row && reader.toInput(task, row);
    return input ? [input] : [];
  });
}

/** The endpoints as they are now (url, status, signing secrets); one deleted meanwhile is left out. */
export async function loadEndpoints(
  db: Executor,
  reader: InputReader,
  ids: string[],
): Promise<NonNullable<AttemptInput['endpoint']>[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('endpoints')
    .select([
      'id',
      'url',
      'livemode',
      'public_only',
      'status',
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
    ])
    .where('id', 'in', ids)
    .execute();
  return rows.map((row) => reader.endpointInput(row.id, row.status, row));
}
