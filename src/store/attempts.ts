import { sql } from 'kysely';
import { liveFlag, toPage, type Page, type PageRequest, type Scope, type StoreContext } from './common.js';
import type { AttemptRow } from './schema.js';
import type { AttemptStatus } from '../domain/states.js';
import { idNotBefore, idTime } from '../domain/ids.js';

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
 * The attempt is one of the message's deliveries', as a condition on `attempt_log` itself, so that each of
 * the view's two parts reads its own index (attempts by delivery, deliveries by id). PostgreSQL plans `in
 * (subquery)` as a join, which does not reach the view's second part (a subquery with a condition of its
 * own): as an array computed once it is a plain condition.
 */
const OF_MESSAGE = {
  sqlite: (messageId: string) =>
    sql<boolean>`attempts.delivery_id in (select id from deliveries where message_id = ${messageId})`,
  postgres: (messageId: string) =>
    sql<boolean>`attempts.delivery_id = any(array(select id from deliveries where message_id = ${messageId}))`,
};

/**
 * Attempts read on their own, newest first, across deliveries (the Svix-compatible surface lists them by
 * endpoint and by message) through `attempt_log`. An endpoint's are found through its indexes by
 * endpoint and time, a message's through its deliveries (OF_MESSAGE); the page's cursor is the last attempt's id, whose time places the
 * next page.
 */
export class Attempts {
  constructor(private readonly ctx: StoreContext) {}

  private read(scope: Scope) {
    return this.ctx.db
      .selectFrom('attempt_log as attempts')
      .innerJoin('deliveries', 'deliveries.id', 'attempts.delivery_id')
      .leftJoin('endpoints', 'endpoints.id', 'deliveries.endpoint_id')
      .selectAll('attempts')
      .select(['deliveries.message_id', 'deliveries.endpoint_id', 'endpoints.url'])
      .where('deliveries.org_id', '=', scope.orgId)
      .where('deliveries.livemode', '=', liveFlag(scope));
  }

  async list(scope: Scope, page: PageRequest, filter: AttemptFilter): Promise<Page<AttemptRead>> {
    return toPage((await this.listQuery(scope, page, filter).execute()) as AttemptRead[], page.limit);
  }

  /** list's statement (its plan is checked in test/postgres/store/attempt-reads.test.ts). */
  listQuery(scope: Scope, page: PageRequest, filter: AttemptFilter) {
    let query = this.read(scope);
    if (filter.endpointId) query = query.where('attempts.endpoint_id', '=', filter.endpointId);
    if (filter.messageId)
      query = query
        .where(OF_MESSAGE[this.ctx.dialect](filter.messageId))
        .where('attempts.id', '>=', idNotBefore('attempt', filter.messageId));
    if (filter.status) query = query.where('attempts.status', '=', filter.status);
    if (filter.before !== undefined) query = query.where('attempts.created_at', '<', filter.before);
    if (filter.after !== undefined) query = query.where('attempts.created_at', '>', filter.after);
    if (page.cursor) {
      // An attempt's id carries the time it was made, its created_at (idFrom).
      const at = idTime(page.cursor) ?? 0;
      const cursor = page.cursor;
      query = query.where((eb) =>
        eb.or([
          eb('attempts.created_at', '<', at),
          eb.and([eb('attempts.created_at', '=', at), eb('attempts.id', '<', cursor)]),
        ]),
      );
    }
    return query
      .orderBy('attempts.created_at', 'desc')
      .orderBy('attempts.id', 'desc')
      .limit(page.limit + 1);
  }

  /** One attempt of a message. */
  async get(scope: Scope, messageId: string, id: string): Promise<AttemptRead | undefined> {
    return (await this.getQuery(scope, messageId, id).executeTakeFirst()) as AttemptRead | undefined;
  }

  /** get's statement (its plan is checked in test/postgres/store/attempt-reads.test.ts). */
  getQuery(scope: Scope, messageId: string, id: string) {
    return this.read(scope).where('attempts.id', '=', id).where(OF_MESSAGE[this.ctx.dialect](messageId));
  }
}
