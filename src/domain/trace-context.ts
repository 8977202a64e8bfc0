import { createHash, randomFillSync } from 'node:crypto';

// W3C Trace Context (https://www.w3.org/TR/trace-context/): a `traceparent` is
// `00-<32 hex trace id>-<16 hex parent span id>-<2 hex flags>`, `tracestate` a vendor list carried along.
// A message keeps the context its emit gave it; every attempt sends a traceparent in that trace whose
// parent is the attempt's own span, so a receiver's spans hang under the webhook that reached them.

/** A message's trace: the trace it belongs to, the span its attempts descend from, and what it carries. */
export interface TraceContext {
  traceId: string;
  spanId: string;
  /** The trace flags byte; bit 0 is "sampled". */
  flags: number;
  tracestate: string | null;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);
/** The most tracestate characters kept: W3C asks every participant to pass on at least 512. */
export const TRACESTATE_MAX_CHARS = 512;
/** The most tracestate list members kept (W3C: at most 32). */
export const TRACESTATE_MAX_MEMBERS = 32;
/** Longer members go first when the kept list is over TRACESTATE_MAX_CHARS (W3C's truncation order). */
const LONG_MEMBER_CHARS = 128;
/**
 * A tracestate key (W3C): a simple key, lcalpha then up to 255 of lcalpha, digits, `_-*\/`; or a
 * multi-tenant `tenant@system` key.
 */
const TRACESTATE_KEY = /^(?:[a-z][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13})$/;
/** A tracestate value (W3C): 1 to 256 printable ASCII characters but `,` and `=`, not ending in a space. */
const TRACESTATE_VALUE = /^[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;
/** The flags of a trace Herald starts: sampled, so a receiver that traces records the webhook's spans. */
const SAMPLED = 1;

/**
 * The context an incoming `traceparent` names, or null when it is absent or not valid (a caller's bad
 * header starts a new trace rather than refusing the emit, as W3C asks of every participant). Its hex is
 * lower case, as W3C's grammar has it: upper case is not valid. Version 00 takes exactly four fields; a
 * later version may append fields, which are ignored; `ff` is never valid.
 */
export function parseTraceparent(header: string | undefined, tracestate?: string | undefined): TraceContext | null {
  if (header === undefined || header.length > 256) return null;
  const match = TRACEPARENT.exec(header.trim());
  if (!match) return null;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
    string?,
  ];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null;
  return { traceId, spanId, flags: Number.parseInt(flags, 16), tracestate: keptTracestate(tracestate) };
}

/**
 * The tracestate kept with a message: the list members W3C's grammar takes (`key=value`, separated by
 * commas and optional spaces or tabs), in their order. A member that is not one, or whose key an earlier
 * member has, is dropped and the rest kept; at most TRACESTATE_MAX_MEMBERS; over TRACESTATE_MAX_CHARS,
 * members longer than 128 characters go first, then members from the end. Null when none is left. A
 * receiver gets only what the grammar allows, whatever a caller sent.
 */
export function keptTracestate(header: string | undefined): string | null {
  if (header === undefined) return null;
  const members: string[] = [];
  const keys = new Set<string>();
  for (const part of header.split(',')) {
    if (members.length === TRACESTATE_MAX_MEMBERS) break;
    const member = trimOws(part);
    const eq = member.indexOf('=');
    if (eq < 1 || eq > 256 || member.length - eq - 1 > 256) continue;
    const key = member.slice(0, eq);
    if (keys.has(key) || !TRACESTATE_KEY.test(key) || !TRACESTATE_VALUE.test(member.slice(eq + 1))) continue;
    keys.add(key);
    members.push(member);
  }
  let kept = members;
  const length = (list: string[]) => list.reduce((sum, m) => sum + m.length, 0) + Math.max(0, list.length - 1);
  if (length(kept) > TRACESTATE_MAX_CHARS) kept = kept.filter((m) => m.length <= LONG_MEMBER_CHARS);
  while (length(kept) > TRACESTATE_MAX_CHARS) kept = kept.slice(0, -1);
  return kept.length === 0 ? null : kept.join(',');
}

/** `text` without the spaces and tabs (HTTP's optional whitespace) around it; in linear time. */
function trimOws(text: string): string {
  let start = 0;
  let end = text.length;
  const ows = (code: number) => code === 0x20 || code === 0x09;
  while (start < end && ows(text.charCodeAt(start))) start++;
  while (end > start && ows(text.charCodeAt(end - 1))) end--;
  return text.slice(start, end);
}

/** The traceparent header of a context. */
export function formatTraceparent(context: Pick<TraceContext, 'traceId' | 'spanId' | 'flags'>): string {
  return `00-${context.traceId}-${context.spanId}-${context.flags.toString(16).padStart(2, '0')}`;
}

/**
 * The trace of a message: the one stored with it, or, for a message emitted outside any trace, one derived
 * from its id. Deriving it costs the emit nothing and gives every attempt, retry and replay of the message
 * the same trace id, wherever it is sent from.
 */
export function messageTrace(messageId: string, traceparent: string | null, tracestate: string | null): TraceContext {
  const stored = traceparent === null ? null : parseTraceparent(traceparent, tracestate ?? undefined);
  return stored ?? derivedTrace(messageId);
}

/** Each base32 digit's value by its character code (-1: not a digit). */
const BASE32 = new Int8Array(128).fill(-1);
for (const [value, digit] of [...'0123456789abcdefghjkmnpqrstvwxyz'].entries()) BASE32[digit.charCodeAt(0)] = value;

/**
 * The trace of a message emitted outside any trace. A message id's 26 base32 digits are 130 bits (time,
 * then 80 random bits): the low 128 are the trace id, whose right-hand bytes are random as W3C asks of
 * trace ids, and the low 64 the span its attempts descend from. An id of another shape is hashed.
 */
function derivedTrace(messageId: string): TraceContext {
  let traceId = idBits(messageId);
  if (traceId === null) traceId = createHash('sha256').update(messageId).digest('hex').slice(0, 32);
  let spanId = traceId.slice(16);
  if (spanId === ZERO_SPAN) spanId = traceId.slice(0, 16);
  return { traceId, spanId, flags: SAMPLED, tracestate: null };
}

/** The low 128 bits of an `evt_` id's 26 base32 digits as 32 hex digits, or null for another shape. */
function idBits(id: string): string | null {
  if (id.length !== 30 || !id.startsWith('evt_')) return null;
  const digits = new Array<number>(26);
  for (let i = 0; i < 26; i++) {
    const code = id.charCodeAt(4 + i);
    const value = code < 128 ? BASE32[code]! : -1;
    if (value < 0) return null;
    digits[i] = value;
  }
  // The first two digits' low 8 bits, then 24 digits four at a time (20 bits: five hex digits).
  let hex = (((digits[0]! << 5) | digits[1]!) & 0xff).toString(16).padStart(2, '0');
  for (let i = 2; i < 26; i += 4) {
    const bits = ((digits[i]! * 32 + digits[i + 1]!) * 32 + digits[i + 2]!) * 32 + digits[i + 3]!;
    hex += bits.toString(16).padStart(5, '0');
  }
  return hex;
}

const spanPool = Buffer.alloc(4096);
let spanPoolOffset = spanPool.length;

/** A new random span id (16 hex digits, never all zeros), from a pool refilled 4 KB at a time. */
export function newSpanId(): string {
  for (;;) {
    if (spanPoolOffset + 8 > spanPool.length) {
      randomFillSync(spanPool);
      spanPoolOffset = 0;
    }
    const id = spanPool.toString('hex', spanPoolOffset, spanPoolOffset + 8);
    spanPoolOffset += 8;
    if (id !== ZERO_SPAN) return id;
  }
}
