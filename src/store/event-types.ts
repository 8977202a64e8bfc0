import { liveFlag, toPage, type Page, type PageRequest, type Scope, type StoreContext } from './common.js';
import type { EventTypeRow } from './schema.js';

export interface EventTypeInput {
  name: string;
  description?: string | undefined;
  example?: object | undefined;
}

export class EventTypes {
  constructor(private readonly ctx: StoreContext) {}

  /** The catalog in name order; the cursor is the last name of the previous page. */
  async list(scope: Scope, page: PageRequest): Promise<Page<EventTypeRow>> {
    let query = this.ctx.db
      .selectFrom('event_types')
      .selectAll()
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope));
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

  /** Creates an entry; returns undefined when the name is taken. */
  async create(scope: Scope, input: EventTypeInput): Promise<EventTypeRow | undefined> {
    const now = this.ctx.now();
    const row: EventTypeRow = {
      org_id: scope.orgId,
      livemode: liveFlag(scope),
      name: input.name,
      description: input.description ?? '',
      version: 1,
      example_json: JSON.stringify(input.example ?? {}),
      created_at: now,
      updated_at: now,
    };
    const inserted = await this.ctx.db
      .insertInto('event_types')
      .values(row)
      .onConflict((oc) => oc.columns(['org_id', 'livemode', 'name']).doNothing())
      .executeTakeFirst();
    return Number(inserted.numInsertedOrUpdatedRows ?? 0n) > 0 ? row : undefined;
  }

  /** Updates description and/or example; a change of example bumps the version. */
  async update(
    scope: Scope,
    name: string,
    changes: { description?: string | undefined; example?: object | undefined },
  ): Promise<EventTypeRow | undefined> {
    const current = await this.get(scope, name);
    if (!current) return undefined;
    const exampleJson = changes.example === undefined ? current.example_json : JSON.stringify(changes.example);
    const next: EventTypeRow = {
      ...current,
      description: changes.description ?? current.description,
      example_json: exampleJson,
      version: exampleJson === current.example_json ? current.version : current.version + 1,
      updated_at: this.ctx.now(),
    };
    await this.ctx.db
      .updateTable('event_types')
      .set({
        description: next.description,
        example_json: next.example_json,
        version: next.version,
        updated_at: next.updated_at,
      })
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope))
      .where('name', '=', name)
      .execute();
    return next;
  }
}
