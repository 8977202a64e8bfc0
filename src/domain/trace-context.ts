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
  if (stored) return stored;
  const digest = createHash('sha256').update(messageId).digest('hex');
  return { traceId: digest.slice(0, 32), spanId: digest.slice(32, 48), flags: SAMPLED, tracestate: null };
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
