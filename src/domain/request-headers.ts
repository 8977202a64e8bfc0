import { BY_NAME } from './headers.js';

// What an attempt keeps of the headers it sent: the lines that cannot be told again when it is read. A
// request's headers (src/delivery/request.ts) repeat what the message and the release already say: the
// content type and user agent are the release's, `webhook-id` is the message id, and the svix-* names copy
// the three webhook-* values. Each such line, when it holds exactly that value, is kept as `@name` (no
// `: `, so a reader of whole blocks, parseHeaderBlock, passes over it) and read back in its place with the
// value it stands for: a delivery's header blocks cost their timestamps, signatures, trace context and the
// endpoint's own headers, about two thirds of the whole.

/** The user agent every request is sent with. */
export const USER_AGENT = 'Herald-Webhooks/0.1 (+https://github.com/herald-webhooks/herald)';

/** The JSON body's content type. */
export const CONTENT_TYPE = 'application/json';

/** What a derivable header's value is, from the message id and the block's own webhook-* values. */
function derivedValue(name: string, messageId: string, own: ReadonlyMap<string, string>): string | undefined {
  switch (name) {
    case 'content-type':
      return CONTENT_TYPE;
    case 'user-agent':
      return USER_AGENT;
    case 'webhook-id':
    case 'svix-id':
      return messageId;
    case 'svix-timestamp':
      return own.get('webhook-timestamp');
    case 'svix-signature':
      return own.get('webhook-signature');
    default:
      return undefined;
  }
}

/**
 * For headerBlock, writing a request's block line by line: whether a line is kept by name only, given its
 * value as shown (the svix-* copies are judged against the webhook-* lines shown before them, as
 * signedRequest orders them).
 */
export function keptByName(messageId: string): (name: string, shown: string) => boolean {
  const own = new Map<string, string>();
  return (name, shown) => {
    const lower = name.toLowerCase();
    if (lower === 'webhook-timestamp' || lower === 'webhook-signature') own.set(lower, shown);
    return derivedValue(lower, messageId, own) === shown;
  };
}

/**
 * A kept request header block as it was sent: each `@name` line read back with its value, the svix-*
 * copies from the webhook-* lines before them (as keptByName judged them).
 */
export function sentRequestHeaders(kept: string, messageId: string): string {
  if (!kept.includes(BY_NAME)) return kept;
  const own = new Map<string, string>();
  return kept
    .split('\n')
    .map((line) => {
      if (line.startsWith(BY_NAME)) {
        const name = line.slice(BY_NAME.length);
        const value = derivedValue(name.toLowerCase(), messageId, own);
        return value === undefined ? line : `${name}: ${value}`;
      }
      const colon = line.indexOf(': ');
      const name = colon > 0 ? line.slice(0, colon).toLowerCase() : '';
      if (name === 'webhook-timestamp' || name === 'webhook-signature') own.set(name, line.slice(colon + 2));
      return line;
    })
    .join('\n');
}
