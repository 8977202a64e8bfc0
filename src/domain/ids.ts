import { hash, randomFillSync, randomInt } from 'node:crypto';

// Ids are time-ordered: 10 characters of millisecond time then 16 of randomness, in Crockford base32.
// Ordered ids make inserts append to the index, give newest-first listing by id and cursors for free.
// Within one millisecond the random part is incremented, so ids from one process stay strictly increasing.
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const TIME_CHARS = 10;
const RANDOM_CHARS = 16;

export const ID_PREFIX = {
  organization: 'org_',
  application: 'app_',
  endpoint: 'ep_',
  message: 'evt_',
  delivery: 'dlv_',
  attempt: 'atm_',
  apiKey: 'key_',
  request: 'req_',
  task: 'tsk_',
  backgroundTask: 'task_',
  outcomeEvent: 'oev_',
  auditEntry: 'aud_',
} as const;
export type IdKind = keyof typeof ID_PREFIX;

let lastTime = -1;
let lastRandom: number[] = [];

function encodeTime(ms: number): string {
  let out = '';
  for (let i = 0; i < TIME_CHARS; i++) {
    out = ALPHABET[ms % 32] + out;
    ms = Math.floor(ms / 32);
  }
  return out;
}

// Random bytes are taken from a pool refilled 4 KB at a time: one call into OpenSSL per 256 ids
// instead of one per id (which showed in emit profiles). Every byte is used once.
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

function freshRandom(): number[] {
  if (poolOffset + RANDOM_CHARS > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const bytes = pool.subarray(poolOffset, poolOffset + RANDOM_CHARS);
  poolOffset += RANDOM_CHARS;
  // Leave the top bit of the first digit clear so increments within a millisecond cannot overflow.
  return Array.from(bytes, (b, i) => (i === 0 ? b % 16 : b % 32));
}

function incremented(digits: number[]): number[] {
  const next = digits.slice();
  for (let i = next.length - 1; i >= 0; i--) {
    if (next[i]! < 31) {
      next[i]!++;
      return next;
    }
    next[i] = 0;
  }
  return freshRandom();
}

/** The 26-character time-ordered part of an id, without prefix. */
export function orderedId(now = Date.now()): string {
  if (now <= lastTime) {
    lastRandom = incremented(lastRandom);
  } else {
    lastTime = now;
    lastRandom = freshRandom();
  }
  return encodeTime(lastTime) + lastRandom.map((d) => ALPHABET[d]).join('');
}

/** The latest time an id can carry: 10 base-32 digits of milliseconds (about the year 37,600). */
export const MAX_ID_TIME = 32 ** TIME_CHARS - 1;

/**
 * The lowest id of `kind` made at `ms` or later: ids sort by time, so `id >= idFloor(kind, t)` starts a
 * range at t. A time before 1970 is the first id there is, and one past MAX_ID_TIME the last.
 */
export function idFloor(kind: IdKind, ms: number): string {
  return ID_PREFIX[kind] + encodeTime(Math.min(Math.max(Math.floor(ms), 0), MAX_ID_TIME));
}

/** How far apart two processes' clocks may be for idNotBefore to find every row. */
export const CLOCK_SKEW_MS = 3_600_000;

/**
 * The lowest id of `kind` that can follow `other`: a delivery is made at or after its message, an attempt
 * at or after its delivery, so a read of one's by the other can start its id range there (on PostgreSQL
 * that leaves out the older partitions), less CLOCK_SKEW_MS, since another process's clock made it. An id
 * that carries no time starts nowhere.
 */
export function idNotBefore(kind: IdKind, other: string): string {
  const at = idTime(other);
  return idFloor(kind, at === null ? 0 : at - CLOCK_SKEW_MS);
}

export function newId(kind: IdKind, now?: number): string {
  return ID_PREFIX[kind] + orderedId(now);
}

/**
 * The millisecond time an id was made at (its first 10 characters after the prefix), or null when `id` is
 * not a time-ordered id: the time an id carries costs no read.
 */
export function idTime(id: string): number | null {
  const underscore = id.indexOf('_');
  if (underscore === -1 || id.length < underscore + 1 + TIME_CHARS) return null;
  let ms = 0;
  for (let i = underscore + 1; i <= underscore + TIME_CHARS; i++) {
    const digit = ALPHABET.indexOf(id[i]!);
    if (digit === -1) return null;
    ms = ms * 32 + digit;
  }
  return ms;
}

/**
 * An id of `kind` at `ms` whose second part is a digest of `seed` instead of randomness: the same inputs
 * always give the same id. An attempt's id comes from the time it finished, its task and the worker that
 * made it, so writing its outcome a second time finds the row already there, while two workers that made
 * the same task's attempt (after a lease ran out) keep one row each.
 */
export function idFrom(kind: IdKind, ms: number, seed: string): string {
  const digest = hash('sha256', seed, 'buffer');
  let tail = '';
  for (let i = 0; i < RANDOM_CHARS; i++) tail += ALPHABET[digest[i]! & 31];
  return ID_PREFIX[kind] + encodeTime(ms) + tail;
}

/** An unguessable token of `bytes` random bytes, base62 so it is safe in URLs and keys. */
export function randomToken(bytes: number): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  // 62^n >= 256^bytes  =>  n = ceil(bytes * 8 / log2(62))
  const length = Math.ceil((bytes * 8) / Math.log2(62));
  let out = '';
  for (let i = 0; i < length; i++) out += chars[randomInt(62)];
  return out;
}
