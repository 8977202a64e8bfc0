import { liveFlag, toPage, type Page, type PageRequest, type Scope, type StoreContext } from './common.js';
import type { AttemptRow } from './schema.js';
import type { AttemptStatus } from '../domain/states.js';

/** An attempt with what names it outside its delivery: the message it sent and its endpoint's URL now. */
export type AttemptRead = AttemptRow & { message_id: string; endpoint_id: string; url: string | null };

export interface AttemptFilter {
  endpointId?: string | undefined;
  messageId?: string | undefined;
  status?: AttemptStatus | undefined;
  /** Made before or after these times (milliseconds), at either end excluded. */
  before?: number | undefined;
  after?: number | undefined;
}

/**
 * Attempts read on their own, newest first, across deliveries (the Svix-compatible surface lists them by
 * endpoint and by message). An endpoint's are found through its (endpoint_id, created_at) index, a
 * message's through its deliveries; the page's cursor is the last attempt's id, whose time places the
 * next page.
 */
export class Attempts {
  constructor(private readonly ctx: StoreContext) {}

  private read(scope: Scope) {
    return this.ctx.db
      .selectFrom('attempts')
      .innerJoin('deliveries', 'deliveries.id', 'attempts.delivery_id')
      .leftJoin('endpoints', 'endpoints.id', 'deliveries.endpoint_id')
      .selectAll('attempts')
      .select(['deliveries.message_id', 'deliveries.endpoint_id', 'endpoints.url'])
      .where('deliveries.org_id', '=', scope.orgId)
      .where('deliveries.livemode', '=', liveFlag(scope));
  }

  async list(scope: Scope, page: PageRequest, filter: AttemptFilter): Promise<Page<AttemptRead>> {
    let query = this.read(scope);
    if (filter.endpointId) query = query.where('attempts.endpoint_id', '=', filter.endpointId);
    if (filter.messageId) query = query.where('deliveries.message_id', '=', filter.messageId);
    if (filter.status) query = query.where('attempts.status', '=', filter.status);
    if (filter.before !== undefined) query = query.where('attempts.created_at', '<', filter.before);
    if (filter.after !== undefined) query = query.where('attempts.created_at', '>', filter.after);
    if (page.cursor) {
      const last = await this.ctx.db
        .selectFrom('attempts')
        .select('created_at')
        .where('id', '=', page.cursor)
        .executeTakeFirst();
      const at = last?.created_at ?? 0;
      const cursor = page.cursor;
      query = query.where((eb) =>
        eb.or([
          eb('attempts.created_at', '<', at),
          eb.and([eb('attempts.created_at', '=', at), eb('attempts.id', '<', cursor)]),
        ]),
      );
    }
    const rows = await query
      .orderBy('attempts.created_at', 'desc')
      .orderBy('attempts.id', 'desc')
      .limit(page.limit + 1)
      .execute();
    return toPage(rows as AttemptRead[], page.limit);
  }

  /** One attempt of a message. */
  async get(scope: Scope, messageId: string, id: string): Promise<AttemptRead | undefined> {
    return (await this.read(scope)
      .where('attempts.id', '=', id)
      .where('deliveries.message_id', '=', messageId)
      .executeTakeFirst()) as AttemptRead | undefined;
  }
}
