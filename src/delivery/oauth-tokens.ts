import { createHash } from 'node:crypto';
import type { OAuth2Client } from '../domain/endpoint-auth.js';
import { LRUCache } from 'lru-cache';

// OAuth2 client credentials (RFC 6749 §4.4) for endpoints whose receiver wants a bearer token from its
// own token server. A token is fetched when an attempt needs one and kept per endpoint in this process
// until shortly before it expires; the attempts that need one meanwhile share a single fetch. A receiver's
// 401 drops the token it was sent, so the next fetch gets a new one.

/** What the token server answered. */
export interface TokenAnswer {
  status: number;
  body: string;
}

/** Posts a form to the token URL with the endpoint's address rules (the Sender's `post`). */
export type TokenPost = (
  url: string,
  headers: Record<string, string>,
  body: string,
  publicOnly: boolean,
  deadline: number,
) => Promise<TokenAnswer>;

/** A token server that failed to give a token: what the attempt records. Never holds the secret. */
export class TokenError extends Error {
  readonly code = 'HERALD_OAUTH2_TOKEN';
}

/** Lifetime assumed for a token answered without a usable `expires_in` (absent, not a positive number). */
const DEFAULT_LIFETIME_MS = 5 * 60_000;
/**
 * Longest lifetime a token is kept for, whatever `expires_in` says: a day. A token server's huge
 * `expires_in` (1e306 seconds is Infinity in milliseconds) would otherwise keep one token for good.
 */
export const MAX_TOKEN_LIFETIME_MS = 24 * 3_600_000;
/** A token is renewed this long before it expires, at most (a tenth of a short lifetime). */
const RENEW_BEFORE_MS = 60_000;
const TOKENS_KEPT = 10_000;

interface Entry {
  /** The client's settings it was fetched with: a changed client (an update) fetches anew. */
  fingerprint: string;
  token: Promise<string>;
  /** True while its fetch is under way: the attempts that need a token meanwhile share it. */
  fetching: boolean;
  /** performance.now() after which it is fetched again, once fetched: always finite (MAX_TOKEN_LIFETIME_MS). */
  renewAt: number;
}

export class OAuthTokens {
  /** By endpoint, the least recently used going first past TOKENS_KEPT. */
  private readonly entries = new LRUCache<string, Entry>({ max: TOKENS_KEPT });

  constructor(private readonly post: TokenPost) {}

  /**
   * The bearer token for an endpoint's client: the kept one, or a new one. `stale`: a token the receiver
   * refused, dropped unless a newer one has replaced it already.
   */
  async token(endpointId: string, client: OAuth2Client, publicOnly: boolean, deadline: number, stale?: string) {
    const fingerprint = fingerprintOf(client);
    const now = performance.now();
    let entry = this.entries.get(endpointId);
    if (entry && stale !== undefined && !entry.fetching) {
      const held = await entry.token.catch(() => null);
      if (held === stale && this.entries.peek(endpointId) === entry) this.entries.delete(endpointId);
      entry = this.entries.get(endpointId);
    }
    if (entry && entry.fingerprint === fingerprint && (entry.fetching || entry.renewAt > now)) return entry.token;
    const fresh: Entry = { fingerprint, token: Promise.resolve(''), fetching: true, renewAt: 0 };
    fresh.token = this.fetch(client, publicOnly, deadline).then(
      ({ token, lifetimeMs }) => {
        fresh.renewAt = performance.now() + lifetimeMs - Math.min(RENEW_BEFORE_MS, lifetimeMs / 10);
        fresh.fetching = false;
        return token;
      },
      (error: unknown) => {
        // A failure is not kept: the next attempt asks again.
        if (this.entries.peek(endpointId) === fresh) this.entries.delete(endpointId);
        throw error;
      },
    );
    this.entries.set(endpointId, fresh);
    return fresh.token;
  }

  private async fetch(
    client: OAuth2Client,
    publicOnly: boolean,
    deadline: number,
  ): Promise<{ token: string; lifetimeMs: number }> {
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    if (client.scope) form.set('scope', client.scope);
    if (client.audience) form.set('audience', client.audience);
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    if (client.clientAuth === 'post') {
      form.set('client_id', client.clientId);
      form.set('client_secret', client.clientSecret);
    } else {
      // RFC 6749 §2.3.1: each part form-encoded before the Basic scheme's base64.
      const pair = `${formEncode(client.clientId)}:${formEncode(client.clientSecret)}`;
      headers.authorization = `Basic ${Buffer.from(pair).toString('base64')}`;
    }
    const where = `OAuth2 token request to ${new URL(client.tokenUrl).host}`;
    let answer: TokenAnswer;
    try {
      answer = await this.post(client.tokenUrl, headers, form.toString(), publicOnly, deadline);
    } catch (error) {
      throw new TokenError(`${where} failed: ${(error as Error).message}`);
    }
    let parsed: { access_token?: unknown; token_type?: unknown; expires_in?: unknown; error?: unknown } = {};
    try {
      parsed = JSON.parse(answer.body);
    } catch {
      // judged below
    }
    if (answer.status < 200 || answer.status >= 300) {
      const code = typeof parsed.error === 'string' ? `: ${parsed.error.slice(0, 100)}` : '';
      throw new TokenError(`${where} failed: HTTP ${answer.status}${code}`);
    }
    if (typeof parsed.access_token !== 'string' || parsed.access_token === '')
      throw new TokenError(`${where} failed: the answer has no access_token`);
    if (typeof parsed.token_type === 'string' && parsed.token_type.toLowerCase() !== 'bearer')
      throw new TokenError(`${where} failed: token_type ${parsed.token_type.slice(0, 40)} is not bearer`);
    return { token: parsed.access_token, lifetimeMs: lifetimeOf(parsed.expires_in) };
  }
}

/**
 * A token's lifetime from its `expires_in` (seconds): a positive number, or a string of one (some token
 * servers quote it), capped at MAX_TOKEN_LIFETIME_MS; anything else (absent, zero, negative, NaN, another
 * type) is DEFAULT_LIFETIME_MS.
 */
export function lifetimeOf(expiresIn: unknown): number {
  const seconds =
    typeof expiresIn === 'number'
      ? expiresIn
      : typeof expiresIn === 'string' && /^\d{1,15}(\.\d{1,6})?$/.test(expiresIn)
        ? Number(expiresIn)
        : Number.NaN;
  if (!Number.isFinite(seconds) || seconds <= 0) return DEFAULT_LIFETIME_MS;
  return Math.min(seconds * 1000, MAX_TOKEN_LIFETIME_MS);
}

/** application/x-www-form-urlencoded encoding of one value. */
function formEncode(text: string): string {
  return new URLSearchParams({ v: text }).toString().slice(2);
}

function fingerprintOf(client: OAuth2Client): string {
  return createHash('sha256')
    .update(
      JSON.stringify([
        client.tokenUrl,
        client.clientId,
        client.clientSecret,
        client.scope,
        client.audience,
        client.clientAuth,
      ]),
    )
    .digest('base64');
}
