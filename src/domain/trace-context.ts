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
/** The most tracestate characters kept: W3C allows 32 members, and a receiver may cut it at 512. */
export const TRACESTATE_MAX_CHARS = 512;
/** The flags of a trace Herald starts: sampled, so a receiver that traces records the webhook's spans. */
const SAMPLED = 1;

/**
 * The context an incoming `traceparent` names, or null when it is absent or not valid (a caller's bad
 * header starts a new trace rather than refusing the emit, as W3C asks of every participant). Version 00
 * takes exactly four fields; a later version may append fields, which are ignored; `ff` is never valid.
 */
export function parseTraceparent(header: string | undefined, tracestate?: string | undefined): TraceContext | null {
  if (header === undefined || header.length > 256) return null;
  const match = TRACEPARENT.exec(header.trim().toLowerCase());
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

/** The tracestate kept with a message: trimmed, at most TRACESTATE_MAX_CHARS, printable ASCII only. */
function keptTracestate(header: string | undefined): string | null {
  const value = header?.trim();
  if (!value || value.length > TRACESTATE_MAX_CHARS || !/^[\x20-\x7e]+$/.test(value)) return null;
  return value;
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
