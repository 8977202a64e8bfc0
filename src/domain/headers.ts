// An endpoint's own headers (decisions: "Delivery controls per endpoint", `headers`): extra headers sent
// with every request to the endpoint, such as an Authorization of the receiver's own.

/** Most headers one endpoint may have. */
export const MAX_HEADERS = 20;
/** Longest value of one header. */
export const MAX_HEADER_VALUE = 1_024;
/** What reads show instead of a sensitive header's value; sent back in an update, it keeps the stored one. */
export const REDACTED = '<redacted>';

/** Names Herald writes itself (or the HTTP layer owns): an endpoint may not set them. */
const RESERVED = new Set([
  'host',
  'content-length',
  'content-type',
  'content-encoding',
  'transfer-encoding',
  'connection',
  'user-agent',
  // The signature's names for receivers written against Svix (src/delivery/request.ts).
  'svix-id',
  'svix-timestamp',
  'svix-signature',
  // Each attempt's W3C trace context (src/tracing/).
  'traceparent',
  'tracestate',
]);
/**
 * Names that describe one connection or hop, not the request: undici refuses to send `expect`,
 * `upgrade`, `keep-alive` and `transfer-encoding` (every attempt would fail), and `te`, `trailer` and
 * `proxy-*` belong to the connection and to a proxy, not to the receiver.
 */
const HOP_BY_HOP = new Set(['expect', 'upgrade', 'keep-alive', 'te', 'trailer']);
/** An HTTP token (RFC 9110): the characters a header name may have. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/**
 * What a header value may hold: HTTP sends values as bytes, one per character (Latin-1), so visible
 * ASCII, spaces and tabs, and the printable Latin-1 letters and signs (U+00A0 to U+00FF). Anything
 * beyond (`€`, emoji, an unpaired surrogate) or a control character cannot be sent, and undici refuses it.
 */
const SENDABLE = /^[\t\u0020-\u007e\u00a0-\u00ff]*$/;

/** Why these headers cannot be an endpoint's, naming the header at fault; null when they can. */
export function headersProblem(headers: Record<string, string>): string | null {
  const names = Object.keys(headers);
  if (names.length > MAX_HEADERS) return `headers may hold at most ${MAX_HEADERS} headers`;
  const seen = new Set<string>();
  for (const name of names) {
    const lower = name.toLowerCase();
    if (!TOKEN.test(name))
      return `headers: "${name}" is not a valid header name (letters, digits and !#$%&'*+-.^_\`|~)`;
    if (RESERVED.has(lower) || lower.startsWith('webhook-'))
      return `headers: "${name}" is set by Herald and cannot be overridden`;
    if (HOP_BY_HOP.has(lower) || lower.startsWith('proxy-'))
      return `headers: "${name}" describes the connection or a proxy, not the request, and cannot be sent to an endpoint`;
    if (seen.has(lower)) return `headers: "${name}" is given twice (header names ignore case)`;
    seen.add(lower);
    const value = headers[name]!;
    if (typeof value !== 'string') return `headers: the value of "${name}" must be a string`;
    if (value.length > MAX_HEADER_VALUE)
      return `headers: the value of "${name}" is longer than ${MAX_HEADER_VALUE} characters`;
    if (!SENDABLE.test(value))
      return `headers: the value of "${name}" holds a character HTTP cannot send in a header: only printable ASCII and Latin-1 (U+0020 to U+007E, U+00A0 to U+00FF) and tabs, no control characters`;
    if (value !== value.trim()) return `headers: the value of "${name}" must not start or end with spaces`;
  }
  return null;
}

/** Whether a header's value is a credential, shown as REDACTED on reads. */
export function isSensitiveHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return (
    lower === 'authorization' ||
    lower === 'proxy-authorization' ||
    lower === 'cookie' ||
    lower.includes('token') ||
    lower.includes('secret') ||
    lower.includes('key')
  );
}

/** The headers as reads show them: sensitive values replaced by REDACTED. */
export function shownHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).map(([name, value]) => [name, isSensitiveHeader(name) ? REDACTED : value]),
  );
}

/**
 * The headers an update stores: the new set, where a sensitive header sent back as REDACTED (as a read
 * showed it) keeps its stored value, so a client can send back what it read with one value changed.
 */
export function mergedHeaders(next: Record<string, string>, stored: Record<string, string>): Record<string, string> {
  const storedByName = new Map(Object.entries(stored).map(([name, value]) => [name.toLowerCase(), value]));
  return Object.fromEntries(
    Object.entries(next).map(([name, value]) => {
      const kept = storedByName.get(name.toLowerCase());
      return [name, value === REDACTED && isSensitiveHeader(name) && kept !== undefined ? kept : value];
    }),
  );
}

/** Most characters of one attempt's stored headers, request or response; the lines past it are left out. */
export const STORED_HEADERS_LIMIT = 8 * 1024;

/**
 * Headers as an attempt keeps them: one `name: value` line each, as HTTP/1.1 writes them (a value holds no
 * line end, so the lines read back as written), in the order given, and at most STORED_HEADERS_LIMIT
 * characters of whole lines. `redact` shows sensitive values as REDACTED (isSensitiveHeader): the request's
 * headers are shown to whoever reads the attempt, and an endpoint's credentials must not be.
 */
export function headerBlock(pairs: Iterable<readonly [string, string]>, redact: boolean): string {
  let block = '';
  for (const [name, value] of pairs) {
    const line = `${name}: ${redact && isSensitiveHeader(name) ? REDACTED : value}\n`;
    if (block.length + line.length > STORED_HEADERS_LIMIT) break;
    block += line;
  }
  return block;
}

/** A stored header block (headerBlock) as an object by lowercase name; a repeated name's values joined by ", ". */
export function parseHeaderBlock(block: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of block.split('\n')) {
    const colon = line.indexOf(': ');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 2);
    headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
  }
  return headers;
}
