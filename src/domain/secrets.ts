import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import { randomToken } from './ids.js';

// --- API keys: shown once, stored only as a SHA-256 hash (they carry 192+ bits of randomness,
// so a fast hash is enough; a slow KDF would only cost every request time).
export const KEY_PREFIX = { test: 'sk_test_', live: 'sk_live_' } as const;

export function generateApiKey(livemode: boolean): string {
  return (livemode ? KEY_PREFIX.live : KEY_PREFIX.test) + randomToken(24);
}

/** SHA-256 (hex) of a bearer credential (an API key, a portal token): what is stored instead of it. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export const hashApiKey = hashToken;

// --- Signing secrets (Standard Webhooks): `whsec_` + base64 of 24 random bytes.
export function generateSigningSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/** The HMAC key of a signing secret: the base64 after `whsec_`. */
function signingKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
}

/** `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">` as Standard Webhooks defines it. */
export function signPayload(secret: string, msgId: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', signingKey(secret)).update(`${msgId}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

// --- Encryption at rest for signing secrets: AES-256-GCM under a key derived from HERALD_SECRET_KEY.

/** Opened secrets a SecretBox keeps (a few hundred kilobytes at most). */
const OPENED_SECRETS_KEPT = 4_096;

export class SecretBox {
  private readonly key: Buffer;
  /**
   * Opened secrets by their sealed text. Every claimed attempt opens its endpoint's secrets, and AES-GCM
   * per attempt costs a few percent of a worker's time. A sealed text never changes
   * (a rotation seals anew, under a new IV), so an entry never goes stale.
   */
  private readonly opened = new Map<string, string>();

  constructor(masterKey: string) {
    this.key = createHash('sha256').update('herald-secret-box\0').update(masterKey).digest();
  }

  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join(':');
  }

  open(sealed: string): string {
    const known = this.opened.get(sealed);
    if (known !== undefined) return known;
    const plaintext = this.decrypt(sealed);
    // Oldest out first: a bound, whatever the number of endpoints.
    if (this.opened.size >= OPENED_SECRETS_KEPT) this.opened.delete(this.opened.keys().next().value!);
    this.opened.set(sealed, plaintext);
    return plaintext;
  }

  private decrypt(sealed: string): string {
    const [version, iv, tag, body] = sealed.split(':');
    if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('unreadable sealed secret');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
  }
}
