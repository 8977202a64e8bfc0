// What a store error means, decided here, in the store, for every caller: the API (which answers 503 for
// the first two), the delivery worker (which tries again only what may pass on a second try) and the
// store itself. Both databases' codes are known in this one place.

/**
 * - `unavailable`: the database is away for now or could not take the transaction (connection lost,
 *   restarting, too many connections, busy, a deadlock or serialization failure that rolled it back):
 *   the same work, tried again shortly, can succeed.
 * - `full`: no room to write (SQLite's SQLITE_FULL, PostgreSQL's 53100): nothing was written; it succeeds
 *   once an operator frees space.
 * - `data`: the database refused a value (PostgreSQL class 22, an oversized or mistyped SQLite value):
 *   the same values fail again.
 * - `constraint`: a uniqueness or other constraint refused the row.
 * - `other`: anything else, a bug among them.
 */
export type StoreErrorKind = 'unavailable' | 'full' | 'data' | 'constraint' | 'other';

/** Network failures and PostgreSQL's "the server is going away" codes. */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  // shut down, crash shutdown, cannot connect now (restarting), too many connections
  '57P01',
  '57P02',
  '57P03',
  '53300',
  // a deadlock or serialization failure rolled the transaction back
  '40P01',
  '40001',
  // a lock not available at once (NOWAIT)
  '55P03',
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  // the worker's queue thread ended under the call (queue-thread.ts); the next call starts another
  'HERALD_QUEUE_THREAD_ENDED',
]);

/** What node-postgres says, without a code, when its connection is gone. */
const CONNECTION_LOST =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection is not queryable|Query read timeout/i;

export function storeErrorKind(error: unknown): StoreErrorKind {
  const e = error as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  const message = typeof e?.message === 'string' ? e.message : '';
  if (code === 'SQLITE_FULL' || code === '53100') return 'full';
  if (UNAVAILABLE_CODES.has(code) || /^08...$/.test(code)) return 'unavailable';
  // 55000 is a broad class; only its refusal of new connections (ALLOW_CONNECTIONS false) means "away".
  if (code === '55000' && /not currently accepting connections/.test(message)) return 'unavailable';
  if (code === '' && CONNECTION_LOST.test(message)) return 'unavailable';
  if (/^22...$/.test(code) || code === 'SQLITE_TOOBIG' || code === 'SQLITE_MISMATCH') return 'data';
  if (/^23...$/.test(code) || code.startsWith('SQLITE_CONSTRAINT')) return 'constraint';
  return 'other';
}

/** Whether the same work, tried again shortly, can succeed. */
export const isTransient = (error: unknown): boolean => storeErrorKind(error) === 'unavailable';

/** The database has no room to write; nothing of the write was saved. */
export const isStorageFull = (error: unknown): boolean => storeErrorKind(error) === 'full';

/** A unique constraint refused the row (both drivers report it their own way). */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** A short description of a store error for a log line: its kind and code. */
export function storeErrorCause(error: unknown): { kind: StoreErrorKind; code: string | null } {
  const code = (error as { code?: unknown } | null)?.code;
  return { kind: storeErrorKind(error), code: typeof code === 'string' ? code : null };
}
