import { recordChange } from './audit-log.js';
import type { CircuitInput } from '../domain/circuit.js';
import type { TransformationSetting } from '../domain/transformations.js';
import { book } from './queue/index.js';
import { isUniqueViolation } from './errors.js';
import { newId } from '../domain/ids.js';
import {
  generateSigningKey,
  publicKeyOf,
  type SecretBox,
  type SignatureType,
  type SigningSecrets,
} from '../domain/secrets.js';
import {
  type EndpointHeaders,
  headersFromText,
  headersText,
  mergedHeaders,
  NO_HEADERS,
  sensitiveNames,
  shownHeaders,
} from '../domain/headers.js';
import type { TlsSettings } from '../domain/pem.js';
import {
  type CheckedDestination,
  type DestinationSecrets,
  type DestinationType,
  isDestinationType,
  type StoredDestination,
  storedDestination,
} from '../domain/destinations.js';
import type { AuthSettings } from '../domain/endpoint-auth.js';
import type { Ordering } from '../domain/fifo.js';
import type { EndpointHealth } from '../domain/endpoint-state.js';
import {
  liveFlag,
  toPage,
  type Executor,
  type Page,
  type PageRequest,
  type Scope,
  type StoreContext,
} from './common.js';
import type { EndpointRow, SecretColumns } from './schema.js';
import { endpointOccurrence } from '../domain/operational.js';
import { operationalApplication, type RaisePolicy, raiseOccurrences } from './operational.js';
import { CLOSED_CIRCUIT } from './circuits.js';

export interface EndpointInput {
  appId: string;
  url: string;
  /** The URL was chosen in a customer portal: it must reach public addresses, in Test too. */
  publicOnly?: boolean | undefined;
  description?: string | undefined;
  eventTypes?: string[] | undefined;
  /** Headers sent with every request (checked by headersProblem). */
  headers?: Record<string, string> | undefined;
  /** Names of `headers` shown as "<redacted>" beside the credential-looking ones (sensitiveHeadersProblem). */
  sensitiveHeaders?: string[] | undefined;
  /** How requests are signed; HMAC unless asked. */
  signatureType?: SignatureType | undefined;
  /** Most requests a second (null or absent: no limit). */
  rateLimit?: number | null | undefined;
  /** Its own retry schedule, checked (retryScheduleProblem); null or absent: the service's. */
  retrySchedule?: string[] | null | undefined;
  /** Its circuit breaker's settings, checked (circuitProblem); null or absent: the service's. */
  circuit?: CircuitInput | null | undefined;
  ordering?: Ordering | undefined;
  /** An operational endpoint (of the environment's hidden application): it raises no events itself. */
  operational?: boolean | undefined;
  /** The caller's stable id for it, unique within the application (EndpointUidTakenError). */
  uid?: string | null | undefined;
  /** It receives only messages sharing one of these (none: every message). */
  channels?: string[] | null | undefined;
  /** A checked content filter (filterProblem); null or absent: none. */
  filter?: object | null | undefined;
  metadata?: Record<string, string> | undefined;
  /** The HMAC secret to sign with (checked by suppliedSecretProblem); a new one when absent. */
  secret?: string | undefined;
  /** Also send the svix-* signature headers (an endpoint made through the Svix-compatible surface). */
  svixHeaders?: boolean | undefined;
  /** Checked TLS settings (checkedTls); null or absent: none. */
  tls?: TlsSettings | null | undefined;
  /** A checked OAuth2 client and its secret (checkedAuth); null or absent: none. */
  auth?: EndpointAuth | null | undefined;
  /** A broker or bucket instead of an HTTP receiver (checkedDestination; its `url` replaces `url`). */
  destination?: { type: DestinationType; checked: CheckedDestination } | undefined;
  /** Its transformation (mergedTransformation, its code checked); absent or null: none. */
  transformation?: TransformationSetting | null | undefined;
}

/** An endpoint's OAuth2 client with its secret in plaintext, as create and update take it. */
export interface EndpointAuth {
  settings: AuthSettings;
  secret: string;
}

export interface EndpointChanges {
  url?: string | undefined;
  description?: string | undefined;
  eventTypes?: string[] | undefined;
  status?: 'active' | 'disabled' | undefined;
  /** The whole new set; a sensitive value sent back as REDACTED keeps the stored one (mergedHeaders). */
  headers?: Record<string, string> | undefined;
  /** The names marked sensitive, replacing the marks (absent: the marked names still in the set stay). */
  sensitiveHeaders?: string[] | undefined;
  /** Most requests a second; null removes the limit. */
  rateLimit?: number | null | undefined;
  /** Its own retry schedule, checked; null returns it to the service's. */
  retrySchedule?: string[] | null | undefined;
  /** Its circuit breaker's settings, checked; null returns it to the service's (its state is kept). */
  circuit?: CircuitInput | null | undefined;
  ordering?: Ordering | undefined;
  /** null removes it. */
  uid?: string | null | undefined;
  /** null or empty: every message. */
  channels?: string[] | null | undefined;
  /** A checked content filter; null removes it. */
  filter?: object | null | undefined;
  metadata?: Record<string, string> | undefined;
  svixHeaders?: boolean | undefined;
  /** The whole new TLS settings (checkedTls, a kept key already in them); null removes them. */
  tls?: TlsSettings | null | undefined;
  /** The whole new OAuth2 client (checkedAuth, a kept secret already in it); null removes it. */
  auth?: EndpointAuth | null | undefined;
  /** The destination's new URL and settings (checkedDestination, kept secrets already in them). */
  destination?: CheckedDestination | undefined;
  /** The whole new transformation (mergedTransformation: fields left out already kept); null removes it. */
  transformation?: TransformationSetting | null | undefined;
}

/** An endpoint's transformation columns, written at `now` (which names the code's version); null: none. */
function transformationColumns(
  setting: TransformationSetting | null,
  now: number,
): Pick<EndpointRow, 'transformation_code' | 'transformation_enabled' | 'transformation_updated_at'> {
  if (!setting) return { transformation_code: null, transformation_enabled: 0, transformation_updated_at: null };
  return {
    transformation_code: setting.code,
    transformation_enabled: setting.enabled ? 1 : 0,
    transformation_updated_at: now,
  };
}

/** An endpoint's transformation as its row holds it; null: none was ever written. */
export function transformationOf(
  row: Pick<EndpointRow, 'transformation_code' | 'transformation_enabled' | 'transformation_updated_at'>,
): (TransformationSetting & { updatedAt: number }) | null {
  if (row.transformation_updated_at === null) return null;
  return {
    code: row.transformation_code,
    enabled: row.transformation_enabled === 1,
    updatedAt: Number(row.transformation_updated_at),
  };
}

/**
 * Rotated-out secrets kept signing at most: each keeps signing until the end of the grace its rotation
 * promised, unless this many newer rotations came in that grace (then the oldest stops early). One
 * signature per secret goes in every request's header.
 */
export const MAX_PREVIOUS_SECRETS = 10;

/** A rotated-out secret and when it stops signing. */
interface RetiredSecret {
  secret: string;
  validUntil: number;
}

/**
 * Removes what is kept about these endpoints outside their rows, in the transaction that deletes them:
 * their rate counters (`endpoint_rates`). A worker that still holds claimed attempts of a deleted endpoint
 * may write its counter again before it finds the endpoint gone; the retention purge removes those.
 */
export async function forgetEndpoints(db: Executor, endpointIds: string[]): Promise<void> {
  if (endpointIds.length === 0) return;
  await db.deleteFrom('endpoint_rates').where('endpoint_id', 'in', endpointIds).execute();
}

/** The columns an endpoint keeps sealed with HERALD_SECRET_KEY. */
const SEALED_COLUMNS = [
  'secret_sealed',
  'previous_secret_sealed',
  'earlier_secrets_sealed',
  'headers_sealed',
  'tls_client_key_sealed',
  'auth_secret_sealed',
  'destination_sealed',
] as const;

const NO_DESTINATION = { destination: null, destination_sealed: null } as const;

export class EndpointUidTakenError extends Error {
  constructor(uid: string) {
    super(`an endpoint with uid "${uid}" already exists in this application`);
  }
}

/** Runs a write of an endpoint's row and turns a taken uid into EndpointUidTakenError. */
async function uidChecked<T>(uid: string | null, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (uid !== null && isUniqueViolation(error)) throw new EndpointUidTakenError(uid);
    throw error;
  }
}

export class EndpointLimitError extends Error {
  constructor(limit: number) {
    super(
      `the application has ${limit} endpoints, the most one may have (HERALD_MAX_ENDPOINTS_PER_APP); delete one first`,
    );
  }
}

export class Endpoints {
  constructor(
    private readonly ctx: StoreContext,
    /** Seals and opens secrets and header values with HERALD_SECRET_KEY (and earlier keys). */
    readonly secrets: SecretBox,
    /** How the operational events of endpoint changes are queued (src/store/operational.ts). */
    private readonly raise: RaisePolicy = { dialect: ctx.dialect, firstDelayMs: 0 },
    /** Called after a commit that queued attempts (operational events). */
    private readonly onQueued: () => void = () => {},
  ) {}

  /**
   * Raises an event about an endpoint in the transaction that changes it; an operational endpoint's own
   * changes raise nothing. Returns how many attempts it queued.
   */
  private async raiseAbout(
    trx: Executor,
    row: Pick<EndpointRow, 'id' | 'org_id' | 'livemode' | 'app_id' | 'operational' | 'type'>,
    appUid: string | null,
    happened: {
      type: 'endpoint.created' | 'endpoint.updated' | 'endpoint.deleted' | 'endpoint.disabled';
      trigger?: 'manual';
    }[],
    now: number,
  ): Promise<number> {
    if (row.operational === 1 || happened.length === 0) return 0;
    const subject = {
      orgId: row.org_id,
      livemode: row.livemode,
      appId: row.app_id,
      appUid,
      endpointId: row.id,
      endpointType: row.type,
    };
    return raiseOccurrences(
      trx,
      this.raise,
      happened.map(({ type, trigger }) => endpointOccurrence(type, subject, now, trigger)),
      now,
    );
  }

  private async appUid(trx: Executor, appId: string): Promise<string | null> {
    const app = await trx.selectFrom('applications').select('uid').where('id', '=', appId).executeTakeFirst();
    return app?.uid ?? null;
  }

  /** Creates an endpoint; returns the row and its signing secret in plaintext (shown once). */
  /** An endpoint's transformation (null: the endpoint is gone, or none was ever written), whatever its scope: the worker's read. */
  async transformation(id: string): Promise<ReturnType<typeof transformationOf>> {
    const row = await this.ctx.db
      .selectFrom('endpoints')
      .select(['transformation_code', 'transformation_enabled', 'transformation_updated_at'])
      .where('id', '=', id)
      .executeTakeFirst();
    return row ? transformationOf(row) : null;
  }

  /**
   * Creates an endpoint; throws EndpointLimitError when its application has `maxPerApp` already (the API
   * and the portal pass HERALD_MAX_ENDPOINTS_PER_APP; tools that seed a store may leave it unbounded). The
   * application's row is written first, as a lock: creates for one application count one after another,
   * so concurrent ones cannot pass the limit together (on SQLite every write transaction is serial anyway).
   */
  async create(
    scope: Scope,
    input: EndpointInput,
    maxPerApp = Number.POSITIVE_INFINITY,
  ): Promise<{ row: EndpointRow; secret: string }> {
    const now = this.ctx.now();
    const signatureType = input.signatureType ?? 'hmac';
    const secret = input.secret ?? generateSigningKey(signatureType);
    const row: EndpointRow = {
      id: newId('endpoint', now),
      org_id: scope.orgId,
      livemode: liveFlag(scope),
      app_id: input.appId,
      url: input.url,
      description: input.description ?? '',
      event_types: JSON.stringify(input.eventTypes ?? []),
      status: 'active',
      secret_sealed: this.secrets.seal(secret),
      previous_secret_sealed: null,
      previous_valid_until: null,
      earlier_secrets_sealed: null,
      earlier_valid_until: null,
      failing_since: null,
      exhausted_at: null,
      public_only: input.publicOnly ? 1 : 0,
      headers_sealed: this.sealHeaders(mergedHeaders(input.headers ?? {}, input.sensitiveHeaders ?? [], NO_HEADERS)),
      signature_type: signatureType,
      public_key: publicKeyOf(secret),
      rate_limit: input.rateLimit ?? null,
      retry_schedule: input.retrySchedule ? JSON.stringify(input.retrySchedule) : null,
      circuit: input.circuit ? JSON.stringify(input.circuit) : null,
      ...CLOSED_CIRCUIT,
      ordering: input.ordering ?? 'unordered',
      operational: input.operational ? 1 : 0,
      uid: input.uid ?? null,
      channels: input.channels && input.channels.length > 0 ? JSON.stringify(input.channels) : null,
      filter: input.filter ? JSON.stringify(input.filter) : null,
      metadata: JSON.stringify(input.metadata ?? {}),
      svix_headers: input.svixHeaders ? 1 : 0,
      ...this.tlsColumns(input.tls ?? null),
      ...this.authColumns(input.auth ?? null),
      type: input.destination?.type ?? 'http',
      ...(input.destination
        ? this.destinationColumns(input.destination.type, input.appId, input.destination.checked)
        : NO_DESTINATION),
      ...transformationColumns(input.transformation ?? null, now),
      created_at: now,
      updated_at: now,
    };
    const queued = await this.ctx.db.transaction().execute(async (trx) => {
      const app = await trx
        .updateTable('applications')
        .set((eb) => ({ updated_at: eb.ref('updated_at') }))
        .where('id', '=', input.appId)
        .returning('uid')
        .executeTakeFirst();
      const { n } = await trx
        .selectFrom('endpoints')
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .where('app_id', '=', input.appId)
        .executeTakeFirstOrThrow();
      if (Number(n) >= maxPerApp) throw new EndpointLimitError(maxPerApp);
      await uidChecked(row.uid, () => trx.insertInto('endpoints').values(row).execute());
      await recordChange(trx, scope, now, { ...auditedAs(row, 'created'), before: null, after: row });
      return this.raiseAbout(trx, row, app?.uid ?? null, [{ type: 'endpoint.created' }], now);
    });
    if (queued > 0) this.onQueued();
    return { row, secret };
  }

  /**
   * Creates an operational endpoint: an endpoint of the environment's hidden application (made on the
   * first one), which receives Herald's operational events.
   */
  async createOperational(
    scope: Scope,
    input: Omit<EndpointInput, 'appId' | 'operational'>,
    maxPerEnvironment = Number.POSITIVE_INFINITY,
  ): Promise<{ row: EndpointRow; secret: string }> {
    const appId = await operationalApplication(this.ctx.db, scope, this.ctx.now());
    return this.create(scope, { ...input, appId, operational: true }, maxPerEnvironment);
  }

  /** The environment's endpoints, or with `operational` its operational endpoints only (never both). */
  async list(
    scope: Scope,
    page: PageRequest,
    /** `httpOnly`: HTTP receivers alone (the Svix-compatible surface serves no destination). */
    filter: { appId?: string | undefined; operational?: boolean; httpOnly?: boolean } = {},
  ): Promise<Page<EndpointRow>> {
    let query = this.ctx.db
      .selectFrom('endpoints')
      .selectAll()
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope))
      .where('operational', '=', filter.operational ? 1 : 0);
    if (filter.appId) query = query.where('app_id', '=', filter.appId);
    if (filter.httpOnly) query = query.where('type', '=', 'http');
    const ascending = page.order === 'asc';
    if (page.cursor) query = query.where('id', ascending ? '>' : '<', page.cursor);
    return toPage(
      await query
        .orderBy('id', ascending ? 'asc' : 'desc')
        .limit(page.limit + 1)
        .execute(),
      page.limit,
    );
  }

  /** An endpoint of an application by its id or its uid; with `appId` null, an operational endpoint. */
  async find(scope: Scope, appId: string | null, idOrUid: string): Promise<EndpointRow | undefined> {
    let query = this.ctx.db
      .selectFrom('endpoints')
      .selectAll()
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope))
      .where('operational', '=', appId === null ? 1 : 0);
    if (appId !== null) query = query.where('app_id', '=', appId);
    return query.where((eb) => eb.or([eb('id', '=', idOrUid), eb('uid', '=', idOrUid)])).executeTakeFirst();
  }

  /** The environment's endpoints among these ids. */
  async getMany(scope: Scope, ids: readonly string[]): Promise<EndpointRow[]> {
    if (ids.length === 0) return [];
    return this.ctx.db
      .selectFrom('endpoints')
      .selectAll()
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope))
      .where('id', 'in', [...ids])
      .execute();
  }

  /** The secret an endpoint signs with now (`whsec_…`, or `whsk_…` for Ed25519). */
  currentSecret(row: Pick<EndpointRow, 'secret_sealed'>): string {
    return this.secrets.open(row.secret_sealed);
  }

  /** An endpoint of the environment; an operational endpoint only when `operational` asks for one. */
  async get(scope: Scope, id: string, operational = false): Promise<EndpointRow | undefined> {
    return this.ctx.db
      .selectFrom('endpoints')
      .selectAll()
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope))
      .where('operational', '=', operational ? 1 : 0)
      .where('id', '=', id)
      .executeTakeFirst();
  }

  /**
   * Updates an endpoint (an operational one only when `operational` asks for one): endpoint.updated, and
   * endpoint.disabled (`manual`) when it disables it, are raised with the change (never about an
   * operational endpoint).
   */
  async update(
    scope: Scope,
    id: string,
    changes: EndpointChanges,
    operational = false,
  ): Promise<EndpointRow | undefined> {
    let queued = 0;
    const updated = await this.ctx.db.transaction().execute(async (trx) => {
      const current = await trx
        .selectFrom('endpoints')
        .selectAll()
        .where('org_id', '=', scope.orgId)
        .where('livemode', '=', liveFlag(scope))
        .where('operational', '=', operational ? 1 : 0)
        .where('id', '=', id)
        .executeTakeFirst();
      if (!current) return undefined;
      const now = this.ctx.now();
      const next: EndpointRow = {
        ...current,
        url: changes.url ?? current.url,
        // Whoever sets the URL decides its rule: the API's callers (the operator's team) may point Test
        // endpoints at their own network.
        public_only: changes.url === undefined || changes.url === current.url ? current.public_only : 0,
        description: changes.description ?? current.description,
        event_types: changes.eventTypes === undefined ? current.event_types : JSON.stringify(changes.eventTypes),
        headers_sealed:
          changes.headers === undefined && changes.sensitiveHeaders === undefined
            ? current.headers_sealed
            : this.sealHeaders(this.updatedHeaders(changes, this.headers(current))),
        rate_limit: changes.rateLimit === undefined ? current.rate_limit : changes.rateLimit,
        retry_schedule:
          changes.retrySchedule === undefined
            ? current.retry_schedule
            : changes.retrySchedule && JSON.stringify(changes.retrySchedule),
        circuit: changes.circuit === undefined ? current.circuit : changes.circuit && JSON.stringify(changes.circuit),
        ordering: changes.ordering ?? current.ordering,
        uid: changes.uid === undefined ? current.uid : changes.uid,
        channels:
          changes.channels === undefined
            ? current.channels
            : changes.channels && changes.channels.length > 0
              ? JSON.stringify(changes.channels)
              : null,
        filter: changes.filter === undefined ? current.filter : changes.filter ? JSON.stringify(changes.filter) : null,
        metadata: changes.metadata === undefined ? current.metadata : JSON.stringify(changes.metadata),
        svix_headers: changes.svixHeaders === undefined ? current.svix_headers : changes.svixHeaders ? 1 : 0,
        ...(changes.tls === undefined ? {} : this.tlsColumns(changes.tls)),
        ...(changes.auth === undefined ? {} : this.authColumns(changes.auth)),
        ...(changes.destination === undefined || !isDestinationType(current.type)
          ? {}
          : this.destinationColumns(current.type, current.app_id, changes.destination)),
        ...(changes.transformation === undefined ? {} : transformationColumns(changes.transformation, now)),
        updated_at: now,
      };
      if (changes.status === 'disabled') next.status = 'disabled';
      // Re-enabling starts a fresh health record.
      if (changes.status === 'active' && current.status === 'disabled')
        Object.assign(next, { status: 'active', failing_since: null, exhausted_at: null });
      // Health is written only when the status changes here: written back unchanged, it could undo an
      // outcome recorded since it was read (a 410's disable under a description change, on PostgreSQL).
      const health =
        next.status === current.status
          ? {}
          : { status: next.status, failing_since: next.failing_since, exhausted_at: next.exhausted_at };
      await uidChecked(next.uid, () =>
        trx
          .updateTable('endpoints')
          .set({
            url: next.url,
            public_only: next.public_only,
            description: next.description,
            event_types: next.event_types,
            headers_sealed: next.headers_sealed,
            rate_limit: next.rate_limit,
            retry_schedule: next.retry_schedule,
            circuit: next.circuit,
            // Turned off: a circuit open now closes, and what it held goes at its time.
            ...(changes.circuit?.enabled === false ? CLOSED_CIRCUIT : {}),
            ordering: next.ordering,
            uid: next.uid,
            channels: next.channels,
            filter: next.filter,
            metadata: next.metadata,
            svix_headers: next.svix_headers,
            tls_client_cert: next.tls_client_cert,
            tls_client_key_sealed: next.tls_client_key_sealed,
            tls_ca: next.tls_ca,
            tls_client_cert_not_after: next.tls_client_cert_not_after,
            auth: next.auth,
            auth_secret_sealed: next.auth_secret_sealed,
            destination: next.destination,
            destination_sealed: next.destination_sealed,
            transformation_code: next.transformation_code,
            transformation_enabled: next.transformation_enabled,
            transformation_updated_at: next.transformation_updated_at,
            ...health,
            updated_at: now,
          })
          .where('id', '=', id)
          .execute(),
      );
      await recordChange(trx, scope, now, { ...auditedAs(current, 'updated'), before: current, after: next });
      if (next.status === 'disabled' && current.status !== 'disabled')
        await book.stopEndpoints(trx, [id], 'disabled', now);
      // No longer FIFO: what waited parked is due now. (Made FIFO: what is queued already goes as queued;
      // deliveries from now on wait their turn.)
      if (current.ordering === 'fifo' && next.ordering !== 'fifo') await book.unparkAll(trx, id, now);
      const disabledHere = next.status === 'disabled' && current.status !== 'disabled';
      queued = await this.raiseAbout(
        trx,
        next,
        await this.appUid(trx, next.app_id),
        [
          { type: 'endpoint.updated' },
          ...(disabledHere ? [{ type: 'endpoint.disabled' as const, trigger: 'manual' as const }] : []),
        ],
        now,
      );
      return next;
    });
    if (queued > 0) this.onQueued();
    return updated;
  }

  /**
   * Deletes an endpoint (an operational one only when `operational` asks for one); endpoint.deleted is
   * raised with it.
   */
  async delete(scope: Scope, id: string, operational = false): Promise<boolean> {
    let queued = 0;
    const deleted = await this.ctx.db.transaction().execute(async (trx) => {
      const row = await trx
        .deleteFrom('endpoints')
        .where('org_id', '=', scope.orgId)
        .where('livemode', '=', liveFlag(scope))
        .where('operational', '=', operational ? 1 : 0)
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst();
      if (!row) return false;
      const now = this.ctx.now();
      await recordChange(trx, scope, now, { ...auditedAs(row, 'deleted'), before: row, after: null });
      await book.stopEndpoints(trx, [id], 'failed', now);
      await forgetEndpoints(trx, [id]);
      queued = await this.raiseAbout(trx, row, await this.appUid(trx, row.app_id), [{ type: 'endpoint.deleted' }], now);
      return true;
    });
    if (queued > 0) this.onQueued();
    return deleted;
  }

  /**
   * Rotates the signing secret: the new one signs from now on, the old one until `previousValidUntil`,
   * and secrets rotated out before it until the end of their own grace.
   */
  async rotateSecret(
    scope: Scope,
    id: string,
    graceMs: number,
    /** The new HMAC secret (checked by suppliedSecretProblem); a new one when absent. */
    key?: string,
    operational = false,
  ): Promise<{ secret: string; publicKey: string | null; previousValidUntil: number } | undefined> {
    for (;;) {
      const row = await this.get(scope, id, operational);
      if (!row) return undefined;
      // A key of the endpoint's own type: its receivers verify one kind of signature.
      const secret = key ?? generateSigningKey(row.signature_type);
      const publicKey = publicKeyOf(secret);
      const now = this.ctx.now();
      const previousValidUntil = now + graceMs;
      // The outgoing secret becomes the previous one; the previous one, if still valid, joins the earlier ones.
      const earlier = this.retiredSecrets(row, now).slice(0, MAX_PREVIOUS_SECRETS - 1);
      // Written only if the secret read is still the current one: a concurrent rotation that got there
      // first would otherwise lose its outgoing secret. The loser reads again.
      const rotated = {
        secret_sealed: this.secrets.seal(secret),
        public_key: publicKey,
        previous_secret_sealed: row.secret_sealed,
        previous_valid_until: previousValidUntil,
        earlier_secrets_sealed: earlier.length > 0 ? this.secrets.seal(JSON.stringify(earlier)) : null,
        earlier_valid_until: earlier.length > 0 ? Math.max(...earlier.map((r) => r.validUntil)) : null,
        updated_at: now,
      };
      const written = await this.ctx.db.transaction().execute(async (trx) => {
        const result = await trx
          .updateTable('endpoints')
          .set(rotated)
          .where('id', '=', id)
          .where('secret_sealed', '=', row.secret_sealed)
          .executeTakeFirst();
        if (Number(result.numUpdatedRows) === 0) return false;
        await recordChange(trx, scope, now, {
          ...auditedAs(row, 'secret_rotated'),
          before: row,
          after: { ...row, ...rotated },
        });
        return true;
      });
      if (written) return { secret, publicKey, previousValidUntil };
    }
  }

  /**
   * Seals again under the current master key what an earlier key sealed (signing secrets and keys, the
   * rotated-out ones, headers), for up to `size` endpoints after `afterId` in id order; `last` is where
   * the next batch starts (null: done). An endpoint is written only if its sealed columns are still those
   * read (a rotation or an update meanwhile is read again), so nothing written meanwhile is lost. Running
   * it again changes nothing: what the current key sealed is left as it is.
   */
  async resealBatch(
    afterId: string | null,
    size: number,
  ): Promise<{ checked: number; resealed: number; last: string | null }> {
    let query = this.ctx.db
      .selectFrom('endpoints')
      .select(['id', ...SEALED_COLUMNS])
      .orderBy('id')
      .limit(size);
    if (afterId !== null) query = query.where('id', '>', afterId);
    const rows = await query.execute();
    let resealed = 0;
    for (let row of rows) {
      for (let tries = 0; ; tries++) {
        const changes: Partial<Record<(typeof SEALED_COLUMNS)[number], string>> = {};
        for (const column of SEALED_COLUMNS) {
          const sealed = row[column];
          if (sealed !== null && !this.secrets.sealedWithCurrentKey(sealed))
            changes[column] = this.secrets.seal(this.secrets.open(sealed));
        }
        if (Object.keys(changes).length === 0) break;
        let update = this.ctx.db.updateTable('endpoints').set(changes).where('id', '=', row.id);
        for (const column of SEALED_COLUMNS)
          update = row[column] === null ? update.where(column, 'is', null) : update.where(column, '=', row[column]);
        if (Number((await update.executeTakeFirst()).numUpdatedRows) > 0) {
          resealed++;
          break;
        }
        const again = await this.ctx.db
          .selectFrom('endpoints')
          .select(['id', ...SEALED_COLUMNS])
          .where('id', '=', row.id)
          .executeTakeFirst();
        if (!again || tries >= 5) break;
        row = again;
      }
    }
    return { checked: rows.length, resealed, last: rows.length < size ? null : rows.at(-1)!.id };
  }

  /**
   * The endpoint's own headers and the names it marks sensitive, opened (throws when they were sealed
   * under another HERALD_SECRET_KEY).
   */
  headers(row: Pick<EndpointRow, 'headers_sealed'>): EndpointHeaders {
    return row.headers_sealed === null ? NO_HEADERS : headersFromText(this.secrets.open(row.headers_sealed));
  }

  /** The headers an update leaves (mergedHeaders): the new set, or the stored one with new marks. */
  private updatedHeaders(changes: EndpointChanges, stored: EndpointHeaders): EndpointHeaders {
    return mergedHeaders(changes.headers ?? stored.headers, changes.sensitiveHeaders, stored);
  }

  /**
   * The headers as reads show them (shownHeaders), and the names shown redacted (sensitiveNames). A process whose HERALD_SECRET_KEY did not seal them
   * shows none (its worker sends nothing to the endpoint either: see the queue's InputReader).
   */
  shownHeaders(row: Pick<EndpointRow, 'headers_sealed'>): { headers: Record<string, string>; sensitive: string[] } {
    try {
      const set = this.headers(row);
      return { headers: shownHeaders(set), sensitive: sensitiveNames(set) };
    } catch {
      return { headers: {}, sensitive: [] };
    }
  }

  /** The columns of TLS settings: the client key sealed. */
  private tlsColumns(tls: TlsSettings | null) {
    return {
      tls_client_cert: tls?.clientCert ?? null,
      tls_client_key_sealed: tls?.clientKey ? this.secrets.seal(tls.clientKey) : null,
      tls_ca: tls?.ca ?? null,
      tls_client_cert_not_after: tls?.clientCertNotAfter ?? null,
    };
  }

  /** The columns of an OAuth2 client: its settings as JSON, its secret sealed. */
  private authColumns(auth: EndpointAuth | null) {
    return {
      auth: auth ? JSON.stringify(auth.settings) : null,
      auth_secret_sealed: auth ? this.secrets.seal(auth.secret) : null,
    };
  }

  /** The columns of a destination: its URL without password, its settings, its secrets sealed. */
  private destinationColumns(type: DestinationType, appId: string, checked: CheckedDestination) {
    const sealed = Object.keys(checked.secrets);
    const stored: StoredDestination = { type, appId, settings: checked.settings, sealed };
    return {
      url: checked.url,
      destination: JSON.stringify(stored),
      destination_sealed: sealed.length > 0 ? this.secrets.seal(JSON.stringify(checked.secrets)) : null,
    };
  }

  /** A destination's settings and the names of its secrets; null for an HTTP endpoint. */
  destinationOf(row: Pick<EndpointRow, 'destination'>): StoredDestination | null {
    return storedDestination(row.destination);
  }

  /** A destination's secrets, opened (throws when sealed under another HERALD_SECRET_KEY). */
  destinationSecrets(row: Pick<EndpointRow, 'destination_sealed'>): DestinationSecrets {
    return row.destination_sealed === null
      ? {}
      : (JSON.parse(this.secrets.open(row.destination_sealed)) as DestinationSecrets);
  }

  /** The endpoint's client key, opened; null without one (throws when sealed under another HERALD_SECRET_KEY). */
  tlsKey(row: Pick<EndpointRow, 'tls_client_key_sealed'>): string | null {
    return row.tls_client_key_sealed === null ? null : this.secrets.open(row.tls_client_key_sealed);
  }

  /** The endpoint's OAuth2 client secret, opened; null without a client. */
  authSecret(row: Pick<EndpointRow, 'auth_secret_sealed'>): string | null {
    return row.auth_secret_sealed === null ? null : this.secrets.open(row.auth_secret_sealed);
  }

  private sealHeaders(set: EndpointHeaders): string | null {
    return Object.keys(set.headers).length === 0 ? null : this.secrets.seal(headersText(set));
  }

  /** The secrets that sign an attempt made at `now` for this endpoint row. */
  signingSecrets(row: SecretColumns, now: number): SigningSecrets {
    return {
      current: this.secrets.open(row.secret_sealed),
      previous: this.retiredSecrets(row, now).map((r) => r.secret),
    };
  }

  /**
   * The rotated-out secrets still signing at `now`, newest first: the previous one, then the earlier ones
   * (their list is opened only while the latest of them is valid).
   */
  private retiredSecrets(row: SecretColumns, now: number): RetiredSecret[] {
    const retired: RetiredSecret[] = [];
    if (row.previous_secret_sealed !== null && row.previous_valid_until !== null && now < row.previous_valid_until) {
      retired.push({ secret: this.secrets.open(row.previous_secret_sealed), validUntil: row.previous_valid_until });
    }
    if (row.earlier_secrets_sealed !== null && row.earlier_valid_until !== null && now < row.earlier_valid_until) {
      const earlier = JSON.parse(this.secrets.open(row.earlier_secrets_sealed)) as RetiredSecret[];
      retired.push(...earlier.filter((r) => now < r.validUntil));
    }
    return retired;
  }

  /** Writes an endpoint's health after an attempt, unless an operator disabled it meanwhile. */
  async recordHealth(db: Executor, id: string, health: EndpointHealth, now: number): Promise<void> {
    await db
      .updateTable('endpoints')
      .set({
        status: health.status,
        failing_since: health.failingSince,
        exhausted_at: health.exhaustedAt,
        updated_at: now,
      })
      .where('id', '=', id)
      .where('status', '!=', 'disabled')
      .execute();
    if (health.status === 'disabled') await book.stopEndpoints(db, [id], 'disabled', now);
  }
}

/** How an endpoint's change is named in the audit log: an operational endpoint is a resource of its own. */
function auditedAs(row: Pick<EndpointRow, 'id' | 'operational'>, verb: string) {
  const resource = row.operational ? ('operational_endpoint' as const) : ('endpoint' as const);
  return { action: `${resource}.${verb}`, resource, resourceId: row.id };
}
