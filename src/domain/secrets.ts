import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import { randomToken } from './ids.js';

// --- API keys: shown once, stored only as a SHA-256 hash (they carry 192+ bits of randomness,
// so a fast hash is enough; a slow KDF would only cost every request time).
export const KEY_PREFIX = { test: 'sk_test_', live: 'sk_live_' } as const;

export function generateApiKey(livemode: boolean): string {
  return (livemode ? KEY_PREFIX.live : KEY_PREFIX.test) + randomToken(24);
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

// --- Signing secrets (Standard Webhooks): `whsec_` + base64 of 24 random bytes.
export function generateSigningSecret(): string {
  return 'whsec_' + randomBytes(24).toString('base64');
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
export class SecretBox {
  private readonly key: Buffer;

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
    const [version, iv, tag, body] = sealed.split(':');
    if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('unreadable sealed secret');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
  }
}
