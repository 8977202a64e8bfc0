// Standard Webhooks verification with WebCrypto only (crypto.subtle), so it runs in Node >= 20 and in
// edge runtimes (v1a needs Ed25519 in WebCrypto). A request is genuine when one of the space-separated
// signatures in `webhook-signature` signs "{webhook-id}.{webhook-timestamp}.{raw body}" with the
// endpoint's key: `v1,<base64 HMAC-SHA256>` keyed with the bytes of a `whsec_` secret, or `v1a,<base64
// Ed25519 signature>` checked with a `whpk_` public key. During a secret rotation Herald sends one
// signature per valid key, so any one matching is enough. A timestamp more than the tolerance away from
// now (either way) is refused, so a captured request cannot be replayed later.

/** Why a request is not taken as Herald's: a missing header, a stale timestamp, no matching signature. */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
}

/** Headers as `fetch` (a Headers) or Node's http (an object, names lower-case) give them. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** The time to judge the timestamp against, in ms since the epoch; default now. */
  now?: number;
}

/** How far `webhook-timestamp` may be from now, in seconds. */
const DEFAULT_TOLERANCE_SECONDS = 5 * 60;

/** An event as Herald sends it: the body of every webhook request. */
export interface HeraldEvent<Data = Record<string, unknown>> {
  type: string;
  timestamp: string;
  data: Data;
}

export class Webhook {
  private readonly scheme: 'v1' | 'v1a';
  private readonly raw: Uint8Array<ArrayBuffer>;
  private key: Promise<CryptoKey> | null = null;

  /**
   * @param secretOrPublicKey the endpoint's `whsec_…` signing secret (hmac endpoints) or its `whpk_…`
   *   public key (ed25519 endpoints).
   * @param toleranceSeconds how far `webhook-timestamp` may be from now, either way.
   */
  constructor(
    secretOrPublicKey: string,
    private readonly toleranceSeconds = DEFAULT_TOLERANCE_SECONDS,
  ) {
    if (secretOrPublicKey.startsWith('whsec_')) {
      const raw = base64Bytes(secretOrPublicKey.slice('whsec_'.length));
      if (!raw || raw.length === 0) throw new TypeError('Webhook: the whsec_ secret is not valid base64');
      this.scheme = 'v1';
      this.raw = raw;
    } else if (secretOrPublicKey.startsWith('whpk_')) {
      const raw = base64Bytes(secretOrPublicKey.slice('whpk_'.length));
      if (raw?.length !== 32) throw new TypeError('Webhook: a whpk_ public key is base64 of 32 bytes');
      this.scheme = 'v1a';
      this.raw = raw;
    } else {
      throw new TypeError('Webhook: expected a whsec_ signing secret or a whpk_ public key');
    }
  }

  /** The WebCrypto key, imported on first use (and so awaited where it is used, should the runtime refuse it). */
  private cryptoKey(): Promise<CryptoKey> {
    this.key ??=
      this.scheme === 'v1'
        ? crypto.subtle.importKey('raw', this.raw, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
        : crypto.subtle.importKey('raw', this.raw, { name: 'Ed25519' }, false, ['verify']);
    return this.key;
  }

  /**
   * Resolves to the parsed event (`{ type, timestamp, data }`) when the request is Herald's, and rejects
   * with WebhookVerificationError when it is not. `payload` must be the raw body as received, not JSON
   * parsed and serialized again.
   */
  async verify<Event = HeraldEvent>(
    payload: string | Uint8Array | ArrayBuffer,
    headers: WebhookHeaders,
    options: VerifyOptions = {},
  ): Promise<Event> {
    const id = header(headers, 'webhook-id');
    const timestamp = header(headers, 'webhook-timestamp');
    const signatures = header(headers, 'webhook-signature');
    if (!id || !timestamp || !signatures) throw new WebhookVerificationError('Missing required headers');
    if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError('Invalid timestamp');
    const nowSeconds = Math.floor((options.now ?? Date.now()) / 1000);
    const seconds = Number(timestamp);
    if (seconds < nowSeconds - this.toleranceSeconds) throw new WebhookVerificationError('Message timestamp too old');
    if (seconds > nowSeconds + this.toleranceSeconds) throw new WebhookVerificationError('Message timestamp too new');
    const body = typeof payload === 'string' ? payload : new TextDecoder().decode(payload);
    const signed = new TextEncoder().encode(`${id}.${timestamp}.${body}`);
    if (!(await this.anyMatches(signatures, signed))) throw new WebhookVerificationError('No matching signature found');
    return JSON.parse(body) as Event;
  }

  private async anyMatches(signatures: string, signed: Uint8Array<ArrayBuffer>): Promise<boolean> {
    const key = await this.cryptoKey();
    let expected: Uint8Array | null = null;
    for (const entry of signatures.split(' ')) {
      const comma = entry.indexOf(',');
      if (comma === -1 || entry.slice(0, comma) !== this.scheme) continue;
      const signature = base64Bytes(entry.slice(comma + 1));
      if (!signature) continue;
      if (this.scheme === 'v1a') {
        if (await crypto.subtle.verify({ name: 'Ed25519' }, key, signature, signed)) return true;
        continue;
      }
      expected ??= new Uint8Array(await crypto.subtle.sign('HMAC', key, signed));
      if (constantTimeEqual(expected, signature)) return true;
    }
    return false;
  }
}

/** One header's value, whatever the case of its name; a repeated header's values joined as HTTP does. */
function header(headers: WebhookHeaders, name: string): string | null {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name);
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (key.toLowerCase() !== name) continue;
    return Array.isArray(value) ? value.join(', ') : (value ?? null);
  }
  return null;
}

/** Equal bytes, in a time that depends on the length only (a signature's length is no secret). */
function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i]! ^ b[i]!;
  return difference === 0;
}

/** The bytes of standard base64 text, or null when it is not base64. */
function base64Bytes(text: string): Uint8Array<ArrayBuffer> | null {
  try {
    const binary = atob(text);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  } catch {
    return null;
  }
}
