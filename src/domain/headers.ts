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

/**
 * Parts of a header name that say its value is a credential, matched anywhere in the lowercase name:
 * `authorization`, `x-auth-token`, `x-api-key`, `x-password`, `cookie` and `set-cookie`, `x-session-id`,
 * `x-hub-signature`. A name holding one is sensitive whoever set it (an endpoint's own header, or a
 * receiver's answer), whether or not it is marked; the value is still sent as set.
 */
export const CREDENTIAL_NAME_PARTS = [
  'auth',
  'token',
  'secret',
  'password',
  'passwd',
  'pwd',
  'key',
  'cookie',
  'credential',
  'session',
  'signature',
  'private',
] as const;

/** CREDENTIAL_NAME_PARTS as one pattern: every header of every attempt is looked at, with one test each. */
const CREDENTIAL_NAME = new RegExp(CREDENTIAL_NAME_PARTS.join('|'), 'i');
/** Headers Herald writes itself whose values are no secret: a receiver checks its signatures against them. */
const OWN_SIGNATURES = new Set(['webhook-signature', 'svix-signature']);

/**
 * Whether a header's value is a credential, shown as REDACTED on reads: its name holds one of
 * CREDENTIAL_NAME_PARTS (Herald's own signature headers excepted: an endpoint cannot set or mark them), or it
 * is one of `marked` (lowercase names an endpoint marks sensitive).
 */
export function isSensitiveHeader(name: string, marked?: ReadonlySet<string>): boolean {
  if (CREDENTIAL_NAME.test(name)) return !OWN_SIGNATURES.has(name.toLowerCase());
  return marked !== undefined && marked.size > 0 && marked.has(name.toLowerCase());
}

/**
 * An endpoint's own headers and the names it marks sensitive (as given; names ignore case). A marked name
 * is shown as REDACTED like a credential-looking one; a mark names a header of the set (others are dropped).
 */
export interface EndpointHeaders {
  headers: Record<string, string>;
  sensitive: string[];
}

export const NO_HEADERS: EndpointHeaders = { headers: {}, sensitive: [] };

/** The lowercase names of `set.sensitive`, as isSensitiveHeader takes them. */
export function markedNames(set: Pick<EndpointHeaders, 'sensitive'>): ReadonlySet<string> {
  return new Set(set.sensitive.map((name) => name.toLowerCase()));
}

/** The names of the set's headers that reads show as REDACTED (marked or credential-looking), in its order. */
export function sensitiveNames(set: EndpointHeaders): string[] {
  const marked = markedNames(set);
  return Object.keys(set.headers).filter((name) => isSensitiveHeader(name, marked));
}

/** The headers as reads show them: sensitive values replaced by REDACTED. */
export function shownHeaders(set: EndpointHeaders): Record<string, string> {
  const marked = markedNames(set);
  return Object.fromEntries(
    Object.entries(set.headers).map(([name, value]) => [name, isSensitiveHeader(name, marked) ? REDACTED : value]),
  );
}

/**
 * The headers an update stores. `next` is the new set; a header sent back as REDACTED that is sensitive
 * (in the stored set, or marked in this update) keeps its stored value, so a client can send back what
 * it read with one value changed. `sensitive` replaces the marks; absent, the stored marks of names still
 * in the set stay. Marks that name no header of the set are dropped.
 */
export function mergedHeaders(
  next: Record<string, string>,
  sensitive: string[] | undefined,
  stored: EndpointHeaders,
): EndpointHeaders {
  const storedByName = new Map(Object.entries(stored.headers).map(([name, value]) => [name.toLowerCase(), value]));
  const storedMarks = markedNames(stored);
  const nextMarks = sensitive === undefined ? storedMarks : markedNames({ sensitive });
  const headers = Object.fromEntries(
    Object.entries(next).map(([name, value]) => {
      const kept = storedByName.get(name.toLowerCase());
      const keeps =
        value === REDACTED &&
        kept !== undefined &&
        (isSensitiveHeader(name, storedMarks) || nextMarks.has(name.toLowerCase()));
      return [name, keeps ? kept : value];
    }),
  );
  return { headers, sensitive: Object.keys(headers).filter((name) => nextMarks.has(name.toLowerCase())) };
}

/** Why `sensitive` cannot be an endpoint's marks; null when it can. */
export function sensitiveHeadersProblem(sensitive: string[]): string | null {
  if (sensitive.length > MAX_HEADERS) return `sensitive_headers may name at most ${MAX_HEADERS} headers`;
  for (const name of sensitive)
    if (!TOKEN.test(name))
      return `sensitive_headers: "${name}" is not a valid header name (letters, digits and !#$%&'*+-.^_\`|~)`;
  return null;
}

/**
 * An endpoint's headers as they are sealed: a JSON array of `[name, value]` pairs, `[name, value, 1]` for a
 * marked one. An array holds any name as plain data (an object would give `__proto__` a meaning).
 */
export function headersText(set: EndpointHeaders): string {
  const marked = markedNames(set);
  return JSON.stringify(
    Object.entries(set.headers).map(([name, value]) =>
      marked.has(name.toLowerCase()) ? [name, value, 1] : [name, value],
    ),
  );
}

/** Sealed headers opened (headersText); a JSON object of name to value is a set with no marks. */
export function headersFromText(text: string): EndpointHeaders {
  const parsed = JSON.parse(text) as unknown;
  if (!Array.isArray(parsed)) return { headers: parsed as Record<string, string>, sensitive: [] };
  const pairs = parsed as [string, string, 1?][];
  return {
    headers: Object.fromEntries(pairs.map(([name, value]) => [name, value])),
    sensitive: pairs.filter((pair) => pair[2] === 1).map(([name]) => name),
  };
}

/**
 * Most characters of one attempt's stored headers, request or response: lines past it are left out
 * (each value is cut first to STORED_HEADER_VALUE_LIMIT, so one long header does not push out the rest).
 */
export const STORED_HEADERS_LIMIT = 8 * 1024;
/** Most characters of one stored header value; a longer one is kept as its first this many and TRUNCATED. */
export const STORED_HEADER_VALUE_LIMIT = 1_024;
/** Most characters of one stored header name; a longer one is cut the same way. */
export const STORED_HEADER_NAME_LIMIT = 256;
/** Begins a line kept by name only, its value left to the reader (`@name`): a header name never holds it. */
export const BY_NAME = '@';

/** What ends a name or value cut to fit. */
export const TRUNCATED = '…';

const cut = (text: string, limit: number) => (text.length > limit ? text.slice(0, limit) + TRUNCATED : text);

/**
 * Headers as an attempt keeps them: one `name: value` line each, as HTTP/1.1 writes them (a value holds no
 * line end, so the lines read back as written), in the order given, each name and value cut to its limit
 * (marked TRUNCATED), and at most STORED_HEADERS_LIMIT characters of whole lines. `redact` shows sensitive
 * values as REDACTED (isSensitiveHeader, with the endpoint's `marked` names): the request's headers and the
 * receiver's answer are shown to whoever reads the attempt, and neither's credentials may be. A line
 * `byName` accepts (given its value as shown) is written as `@name`, its value left to the reader.
 */
export function headerBlock(
  pairs: Iterable<readonly [string, string]>,
  redact: boolean,
  marked?: ReadonlySet<string>,
  byName?: (name: string, shown: string) => boolean,
): string {
  let block = '';
  for (const [name, value] of pairs) {
    const shown = redact && isSensitiveHeader(name, marked) ? REDACTED : cut(value, STORED_HEADER_VALUE_LIMIT);
    // A line that its reader can tell again is kept by name only (src/domain/request-headers.ts).
    const line = byName?.(name, shown) ? `${BY_NAME}${name}\n` : `${cut(name, STORED_HEADER_NAME_LIMIT)}: ${shown}\n`;
    if (block.length + line.length > STORED_HEADERS_LIMIT) break;
    block += line;
  }
  return block;
}

/**
 * A stored header block (headerBlock) by lowercase name; a repeated name's values joined by ", ". The
 * object has no prototype, so every name (`__proto__`, `constructor`) is an own property holding its value.
 */
export function parseHeaderBlock(block: string): Record<string, string> {
  const headers = Object.create(null) as Record<string, string>;
  for (const line of block.split('\n')) {
    const colon = line.indexOf(': ');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 2);
    headers[name] = Object.hasOwn(headers, name) ? `${headers[name]}, ${value}` : value;
  }
  return headers;
}
