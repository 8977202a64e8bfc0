import { outboundEnvelope, sharesChannel, subscribes } from '../domain/envelope.js';
import { type FilterBudget, FilterBudgetExceeded, filterTester } from '../domain/content-filter.js';
import { type Compilable, type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from './schema.js';
import type { Actor } from '../domain/audit.js';
import type { Dialect } from './db.js';
import type { OffLoopReader } from './reads-off-loop.js';

/**
 * Whose data a request may see: one organization in one environment; and who asks (the audit log's
 * actor, written with each change of configuration; absent: Herald itself).
 */
export interface Scope {
  orgId: string;
  livemode: boolean;
  actor?: Actor;
}

export interface StoreContext {
  db: Kysely<Database>;
  dialect: Dialect;
  now: () => number;
  /**
   * Runs a read whose cost grows with a tenant's history without holding the event loop (reads-off-loop.ts);
   * absent where no such read is made (the queue thread), and then the read runs on `db`.
   */
  readOffLoop?: OffLoopReader;
}

/** A read whose cost grows with a tenant's history: off the event loop where the store has a way. */
export async function readOffLoop<Row>(ctx: StoreContext, query: Compilable<Row>): Promise<Row[]> {
  const compiled = query.compile();
  return ctx.readOffLoop ? ctx.readOffLoop(compiled) : (await ctx.db.executeQuery(compiled)).rows;
}

export type Executor = Kysely<Database> | Transaction<Database>;

export const liveFlag = (scope: Scope): number => (scope.livemode ? 1 : 0);

/**
 * A condition that a JSON list column (a message's `channels` or `tags`) holds `name` (names have no
 * quotes; LIKE's wildcards are escaped). `column` may be qualified (`messages.tags`).
 */
export const listHolds = (column: string, name: string) =>
  sql<boolean>`${sql.ref(column)} like ${`%${JSON.stringify(name).replace(/[\\%_]/g, (c) => `\\${c}`)}%`} escape '\\'`;

export interface PageRequest {
  limit: number;
  /** Id of the last item of the previous page; the page holds the items after it in `order`. */
  cursor?: string | undefined;
  /** Newest first (`desc`, the default) or oldest first (`asc`); lists that take it say so. */
  order?: 'asc' | 'desc' | undefined;
}

export interface Page<T> {
  items: T[];
  hasMore: boolean;
  nextCursor: string | null;
}

/** Turns rows fetched with `limit + 1` into a page and its cursor (ids are time-ordered). */
export function toPage<T>(
  rows: T[],
  limit: number,
  cursorOf: (row: T) => string = (row) => (row as { id: string }).id,
): Page<T> {
  const hasMore = rows.length > limit;
  const items = hasMore ? rows.slice(0, limit) : rows;
  return { items, hasMore, nextCursor: hasMore ? cursorOf(items[items.length - 1]!) : null };
}

/** Splits rows for multi-row inserts so no statement passes the drivers' bound-parameter limits. */
export function chunks<T>(rows: T[], size = 500): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += size) out.push(rows.slice(i, i + size));
  return out;
}

export function parseJsonList(text: string): string[] {
  return JSON.parse(text) as string[];
}

/** A nullable JSON list column as names, null as none. */
export const namesOf = (text: string | null): string[] | null => (text === null ? null : parseJsonList(text));

/**
 * Whether an endpoint's row receives a message's: its event types, then its channels (src/domain/
 * envelope.ts), then its content filter (src/domain/content-filter.ts) over the outbound body, which
 * `envelope` gives only when a filter asks for it (the payload is parsed once per message at most).
 * The message's filters share `budget`; a filter it cannot pay for is not applied and the endpoint
 * receives the message (counted in `budget.unapplied`): a message is delivered to more endpoints than
 * their filters ask for, never silently to fewer.
 */
export function receives(
  endpoint: { event_types: string; channels: string | null; filter: string | null },
  message: { event_type: string; channels: string | null },
  envelope: () => unknown,
  budget: FilterBudget,
): boolean {
  if (!subscribes(parseJsonList(endpoint.event_types), message.event_type)) return false;
  if (!sharesChannel(namesOf(endpoint.channels), namesOf(message.channels))) return false;
  if (endpoint.filter === null) return true;
  try {
    return filterTester(endpoint.filter)(envelope(), budget);
  } catch (error) {
    if (!(error instanceof FilterBudgetExceeded)) throw error;
    budget.unapplied++;
    return true;
  }
}

/** The outbound body of a message, parsed on first use and then kept (receives' `envelope`). */
export function envelopeOnce(
  message: { event_type: string; created_at: number },
  payloadJson: () => string | undefined,
): () => unknown {
  let envelope: unknown;
  let read = false;
  return () => {
    if (!read) {
      const payload = payloadJson();
      envelope = payload === undefined ? undefined : outboundEnvelope(message.event_type, message.created_at, payload);
      read = true;
    }
    return envelope;
  };
}
