import { recordChange } from './audit-log.js';
import { liveFlag, toPage, type Page, type PageRequest, type Scope, type StoreContext } from './common.js';
import type { EventTypeRow } from './schema.js';

export interface EventTypeInput {
  name: string;
  description?: string | undefined;
  example?: object | undefined;
  /** A JSON Schema the caller has checked (SchemaCompiler). */
  schema?: object | undefined;
  archived?: boolean | undefined;
  deprecated?: boolean | undefined;
  groupName?: string | null | undefined;
}

export interface EventTypeChanges {
  description?: string | undefined;
  example?: object | undefined;
  /** A checked JSON Schema, or null to remove the entry's schema. */
  schema?: object | null | undefined;
  archived?: boolean | undefined;
  deprecated?: boolean | undefined;
  groupName?: string | null | undefined;
}

/** Creating past the most event types an environment may have (HERALD_MAX_EVENT_TYPES). */
export class EventTypeLimitError extends Error {
  constructor(limit: number) {
    super(
      `the environment has ${limit} event types, the most one may have (HERALD_MAX_EVENT_TYPES); delete or reuse one`,
    );
  }
}

/**
 * How long an emit may use an event type's schema as read: emits would otherwise read the catalog once
 * each. A change made by this process applies at once; one made by another process within this time.
 */
export const SCHEMA_CACHE_MS = 2_000;
/** Entries the schema lookup cache holds before it starts over. */
const SCHEMA_CACHE_ENTRIES = 10_000;

/** An entry within its environment as one key. */
const entryKey = (scope: Scope, name: string) => `${scope.orgId}|${liveFlag(scope)}|${name}`;

export class EventTypes {
  constructor(private readonly ctx: StoreContext) {}

  /** Recent answers of schemaOf by entryKey, each until its `until`. */
  private readonly schemaCache = new Map<string, { schemaJson: string | null; until: number }>();
  /** Counts changes written by this process: a lookup that overlapped one may have read the row before it. */
  private schemaGeneration = 0;

  /** Forgets one entry's cached schema, before a change is written and again once it is. */
  private forgetSchema(scope: Scope, name: string): void {
    this.schemaCache.delete(entryKey(scope, name));
    this.schemaGeneration++;
  }

  /**
   * The schema (JSON text) that payloads of `name` must satisfy, or null when the entry has none or there
   * is no such entry (emit refuses unknown event types itself). Read at most once per SCHEMA_CACHE_MS per
   * entry; within that time the same string is returned, so a lookup keyed by it stays cheap.
   */
  async schemaOf(scope: Scope, name: string): Promise<string | null> {
    const key = entryKey(scope, name);
    const now = Date.now();
    const cached = this.schemaCache.get(key);
    if (cached && cached.until > now) return cached.schemaJson;
    const generation = this.schemaGeneration;
    const row = await this.ctx.db
      .selectFrom('event_types')
      .select('schema_json')
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope))
      .where('name', '=', name)
      .executeTakeFirst();
    const schemaJson = row?.schema_json ?? null;
    if (generation !== this.schemaGeneration) return schemaJson;
    if (this.schemaCache.size >= SCHEMA_CACHE_ENTRIES) this.schemaCache.clear();
    this.schemaCache.set(key, { schemaJson, until: now + SCHEMA_CACHE_MS });
    return schemaJson;
  }

  /** The catalog in name order; the cursor is the last name of the previous page. Archived entries on request. */
  async list(scope: Scope, page: PageRequest, { archived = true } = {}): Promise<Page<EventTypeRow>> {
    let query = this.ctx.db
      .selectFrom('event_types')
      .selectAll()
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope));
    if (!archived) query = query.where('archived', '=', 0);
    if (page.cursor) query = query.where('name', '>', page.cursor);
    return toPage(
      await query
        .orderBy('name')
        .limit(page.limit + 1)
        .execute(),
      page.limit,
      (row) => row.name,
    );
  }

  async get(scope: Scope, name: string): Promise<EventTypeRow | undefined> {
    return this.ctx.db
      .selectFrom('event_types')
      .selectAll()
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope))
      .where('name', '=', name)
      .executeTakeFirst();
  }

  /** The names among `names` that are not in this environment's catalog. */
  async unknownNames(scope: Scope, names: string[]): Promise<string[]> {
    if (names.length === 0) return [];
    const rows = await this.ctx.db
      .selectFrom('event_types')
      .select('name')
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope))
      .where('name', 'in', names)
      .execute();
    const known = new Set(rows.map((r) => r.name));
    return names.filter((name) => !known.has(name));
  }

  /**
   * Creates an entry; returns undefined when the name is taken, and throws EventTypeLimitError when the
   * environment has `maxPerEnvironment` entries already (the API passes HERALD_MAX_EVENT_TYPES). The
   * organization's row is written first, as a lock: creates in one organization count one after another,
   * so concurrent ones cannot pass the limit together (on SQLite every write transaction is serial anyway).
   */
  async create(
    scope: Scope,
    input: EventTypeInput,
    maxPerEnvironment = Number.POSITIVE_INFINITY,
  ): Promise<EventTypeRow | undefined> {
    const now = this.ctx.now();
    const row: EventTypeRow = {
      org_id: scope.orgId,
      livemode: liveFlag(scope),
      name: input.name,
      description: input.description ?? '',
      version: 1,
      example_json: JSON.stringify(input.example ?? {}),
      schema_json: input.schema === undefined ? null : JSON.stringify(input.schema),
      archived: input.archived ? 1 : 0,
      deprecated: input.deprecated ? 1 : 0,
      group_name: input.groupName ?? null,
      created_at: now,
      updated_at: now,
    };
    this.forgetSchema(scope, input.name);
    try {
      return await this.ctx.db.transaction().execute(async (trx) => {
        await trx
          .updateTable('organizations')
          .set((eb) => ({ created_at: eb.ref('created_at') }))
          .where('id', '=', scope.orgId)
          .execute();
        if (Number.isFinite(maxPerEnvironment)) {
          const { n } = await trx
            .selectFrom('event_types')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('org_id', '=', scope.orgId)
            .where('livemode', '=', liveFlag(scope))
            .executeTakeFirstOrThrow();
          if (Number(n) >= maxPerEnvironment) {
            const taken = await trx
              .selectFrom('event_types')
              .select('name')
              .where('org_id', '=', scope.orgId)
              .where('livemode', '=', liveFlag(scope))
              .where('name', '=', input.name)
              .executeTakeFirst();
            if (taken) return undefined;
            throw new EventTypeLimitError(maxPerEnvironment);
          }
        }
        const inserted = await trx
          .insertInto('event_types')
          .values(row)
          .onConflict((oc) => oc.columns(['org_id', 'livemode', 'name']).doNothing())
          .executeTakeFirst();
        if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 0) return undefined;
        await recordChange(trx, scope, now, {
          action: 'event_type.created',
          resource: 'event_type',
          resourceId: row.name,
          before: null,
          after: row,
        });
        return row;
      });
    } finally {
      this.forgetSchema(scope, input.name);
    }
  }

  /**
   * Updates description, example and/or schema; a change of example or schema bumps the version. `check`
   * sees the entry as it would be written, within the transaction that writes it (no other change comes
   * between), and throws to refuse it: then nothing is written.
   */
  async update(
    scope: Scope,
    name: string,
    changes: EventTypeChanges,
    check: (next: EventTypeRow) => void = () => {},
  ): Promise<EventTypeRow | undefined> {
    this.forgetSchema(scope, name);
    try {
      return await this.ctx.db.transaction().execute(async (trx) => {
        let read = trx
          .selectFrom('event_types')
          .selectAll()
          .where('org_id', '=', scope.orgId)
          .where('livemode', '=', liveFlag(scope))
          .where('name', '=', name);
        if (this.ctx.dialect === 'postgres') read = read.forUpdate();
        const current = await read.executeTakeFirst();
        if (!current) return undefined;
        const exampleJson = changes.example === undefined ? current.example_json : JSON.stringify(changes.example);
        const schemaJson =
          changes.schema === undefined
            ? current.schema_json
            : changes.schema === null
              ? null
              : JSON.stringify(changes.schema);
        const changed = exampleJson !== current.example_json || schemaJson !== current.schema_json;
        const next: EventTypeRow = {
          ...current,
          description: changes.description ?? current.description,
          example_json: exampleJson,
          schema_json: schemaJson,
          version: changed ? current.version + 1 : current.version,
          archived: changes.archived === undefined ? current.archived : changes.archived ? 1 : 0,
          deprecated: changes.deprecated === undefined ? current.deprecated : changes.deprecated ? 1 : 0,
          group_name: changes.groupName === undefined ? current.group_name : changes.groupName,
          updated_at: this.ctx.now(),
        };
        check(next);
        await trx
          .updateTable('event_types')
          .set({
            description: next.description,
            example_json: next.example_json,
            schema_json: next.schema_json,
            version: next.version,
            archived: next.archived,
            deprecated: next.deprecated,
            group_name: next.group_name,
            updated_at: next.updated_at,
          })
          .where('org_id', '=', scope.orgId)
          .where('livemode', '=', liveFlag(scope))
          .where('name', '=', name)
          .execute();
        await recordChange(trx, scope, next.updated_at, {
          action: 'event_type.updated',
          resource: 'event_type',
          resourceId: name,
          before: current,
          after: next,
        });
        return next;
      });
    } finally {
      this.forgetSchema(scope, name);
    }
  }

  /** Removes an entry for good (messages of it are refused from then on); false when there is none. */
  async delete(scope: Scope, name: string): Promise<boolean> {
    this.forgetSchema(scope, name);
    try {
      return await this.ctx.db.transaction().execute(async (trx) => {
        const row = await trx
          .deleteFrom('event_types')
          .where('org_id', '=', scope.orgId)
          .where('livemode', '=', liveFlag(scope))
          .where('name', '=', name)
          .returningAll()
          .executeTakeFirst();
        if (!row) return false;
        await recordChange(trx, scope, this.ctx.now(), {
          action: 'event_type.deleted',
          resource: 'event_type',
          resourceId: name,
          before: row,
          after: null,
        });
        return true;
      });
    } finally {
      this.forgetSchema(scope, name);
    }
  }
}
