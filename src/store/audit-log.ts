import { changesOf, SYSTEM_ACTOR, type RowShape } from '../domain/audit.js';
import { idFloor, newId } from '../domain/ids.js';
import {
  liveFlag,
  toPage,
  type Executor,
  type Page,
  type PageRequest,
  type Scope,
  type StoreContext,
} from './common.js';
import type { AuditEntryRow } from './schema.js';
import { CLOSED_CIRCUIT } from './circuits.js';

// The audit log: one entry per change of configuration, written by the store function that makes the
// change, in its transaction, so a change and its entry are kept or lost together.

const set = (...names: string[]): ReadonlySet<string> => new Set(names);
/** Columns no entry reports: the scope, times of the row itself, and state the service changes on its own. */
const COMMON_IGNORED = ['org_id', 'livemode', 'created_at', 'updated_at'];

const ENDPOINT_SHAPE: RowShape = {
  secret: set(
    'secret_sealed',
    'previous_secret_sealed',
    'earlier_secrets_sealed',
    'headers_sealed',
    'tls_client_key_sealed',
    'auth_secret_sealed',
    'destination_sealed',
  ),
  json: set('event_types', 'retry_schedule', 'circuit', 'channels', 'filter', 'metadata', 'auth', 'destination'),
  ignored: set(
    ...COMMON_IGNORED,
    'failing_since',
    'exhausted_at',
    'previous_valid_until',
    'earlier_valid_until',
    'transformation_updated_at',
    // The circuit's state, which the worker changes (its settings, `circuit`, are reported).
    ...Object.keys(CLOSED_CIRCUIT),
    'operational',
  ),
};

/** How each audited resource's row reads in an entry. */
export const SHAPES = {
  application: {
    secret: set('portal_token_hash'),
    json: set('metadata'),
    ignored: set(...COMMON_IGNORED, 'operational'),
  },
  endpoint: ENDPOINT_SHAPE,
  operational_endpoint: ENDPOINT_SHAPE,
  event_type: { secret: set(), json: set('example_json', 'schema_json'), ignored: set(...COMMON_IGNORED) },
  api_key: { secret: set('key_hash'), json: set('app_ids'), ignored: set(...COMMON_IGNORED) },
  organization: { secret: set(), json: set(), ignored: set('created_at') },
} satisfies Record<string, RowShape>;
export type AuditedResource = keyof typeof SHAPES;

/** What one entry says: the action, the resource, and its row before and after (null: created, deleted). */
export interface AuditChange {
  action: string;
  resource: AuditedResource | 'portal_link' | 'master_key';
  resourceId: string;
  before: object | null;
  after: object | null;
}

/** Writes the entry of one change, on `db` (the change's transaction), by the scope's actor. */
export async function recordChange(db: Executor, scope: Scope, now: number, change: AuditChange): Promise<void> {
  const actor = scope.actor ?? SYSTEM_ACTOR;
  const shape: RowShape = (SHAPES as Record<string, RowShape>)[change.resource] ?? SHAPES.organization;
  await db
    .insertInto('audit_log')
    .values({
      id: newId('auditEntry', now),
      org_id: scope.orgId,
      livemode: liveFlag(scope),
      actor_type: actor.type,
      actor_id: actor.id,
      action: change.action,
      resource_type: change.resource,
      resource_id: change.resourceId,
      changes: JSON.stringify(changesOf(change.before, change.after, shape)),
      request_id: actor.requestId,
      created_at: now,
    })
    .execute();
}

export interface AuditFilter {
  resourceType?: string | undefined;
  resourceId?: string | undefined;
  action?: string | undefined;
  actorId?: string | undefined;
  since?: number | undefined;
  until?: number | undefined;
}

export class AuditLog {
  constructor(private readonly ctx: StoreContext) {}

  /** A page of the environment's entries, newest first. Times bound the id range: ids carry their time. */
  async list(scope: Scope, page: PageRequest, filter: AuditFilter = {}): Promise<Page<AuditEntryRow>> {
    let query = this.ctx.db
      .selectFrom('audit_log')
      .selectAll()
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope));
    if (filter.resourceId !== undefined) query = query.where('resource_id', '=', filter.resourceId);
    if (filter.resourceType !== undefined) query = query.where('resource_type', '=', filter.resourceType);
    if (filter.action !== undefined) query = query.where('action', '=', filter.action);
    if (filter.actorId !== undefined) query = query.where('actor_id', '=', filter.actorId);
    if (filter.since !== undefined) query = query.where('id', '>=', idFloor('auditEntry', filter.since));
    if (filter.until !== undefined) query = query.where('id', '<', idFloor('auditEntry', filter.until));
    if (page.cursor) query = query.where('id', '<', page.cursor);
    const rows = await query
      .orderBy('id', 'desc')
      .limit(page.limit + 1)
      .execute();
    return toPage(rows, page.limit);
  }
}
