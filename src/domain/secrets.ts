import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  createPrivateKey,
  createPublicKey,
  type KeyObject,
  randomBytes,
  sign,
  timingSafeEqual,
  verify,
} from 'node:crypto';
import { randomToken } from './ids.js';
import { LRUCache } from 'lru-cache';

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

/**
 * Why a signing secret a caller supplies cannot be used, or null: `whsec_` and the base64 of 24 to 64
 * bytes, as Svix accepts (a shorter key is guessable; a longer one is hashed down by HMAC anyway).
 */
export function suppliedSecretProblem(secret: string): string | null {
  const match = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(secret);
  const bytes = match ? Buffer.from(match[1]!, 'base64') : null;
  if (!bytes || bytes.toString('base64').replace(/=+$/, '') !== match![1]!.replace(/=+$/, ''))
    return 'secret must be whsec_ followed by base64';
  if (bytes.length < 24 || bytes.length > 64) return 'secret must hold 24 to 64 bytes after whsec_';
  return null;
}

/** The HMAC key of a signing secret: the base64 after `whsec_`. */
function signingKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
}

/**
 * The signature of one request as Standard Webhooks defines it, over `{id}.{timestamp}.{body}`: with a
 * `whsec_` secret `v1,<base64 HMAC-SHA256>`; with a `whsk_` key `v1a,<base64 of the 64-byte Ed25519
 * signature>`. The key's prefix decides, so rotated-out keys sign as they were made.
 */
export function signPayload(secret: string, msgId: string, timestampSeconds: number, body: string): string {
  const signed = `${msgId}.${timestampSeconds}.${body}`;
  if (secret.startsWith(ED25519_SECRET_PREFIX))
    return `v1a,${sign(null, Buffer.from(signed), ed25519PrivateKey(secret)).toString('base64')}`;
  const mac = createHmac('sha256', signingKey(secret)).update(signed).digest('base64');
  return `v1,${mac}`;
}

// --- Asymmetric signing keys (Standard Webhooks `v1a`): `whsk_` + base64 of the 32-byte Ed25519 seed,
// kept sealed like a secret; `whpk_` + base64 of the 32-byte raw public key, shown to the receiver.
export type SignatureType = 'hmac' | 'ed25519';
const ED25519_SECRET_PREFIX = 'whsk_';
const ED25519_PUBLIC_PREFIX = 'whpk_';
/** DER before the 32-byte seed in a PKCS#8 Ed25519 private key, and before the raw key in an SPKI public one. */
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_ED25519 = Buffer.from('302a300506032b6570032100', 'hex');
/** Opened secrets (and Ed25519 private keys) kept, the least recently used going first: a few hundred kilobytes at most. */
const OPENED_SECRETS_KEPT = 4_096;

/** Private keys made from `whsk_` texts: building one per request costs more than signing. */
const privateKeys = new LRUCache<string, KeyObject>({ max: OPENED_SECRETS_KEPT });

/** A new signing secret of the endpoint's type: `whsec_…` (HMAC) or `whsk_…` (Ed25519). */
export function generateSigningKey(type: SignatureType): string {
  return type === 'ed25519' ? `${ED25519_SECRET_PREFIX}${randomBytes(32).toString('base64')}` : generateSigningSecret();
}

/** The Ed25519 private key of a `whsk_` text. */
function ed25519PrivateKey(secret: string): KeyObject {
  let key = privateKeys.get(secret);
  if (!key) {
    const seed = Buffer.from(secret.slice(ED25519_SECRET_PREFIX.length), 'base64');
    key = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, seed]), format: 'der', type: 'pkcs8' });
    privateKeys.set(secret, key);
  }
  return key;
}

/** The `whpk_` public key of a `whsk_` key; null for an HMAC secret, which has none. */
export function publicKeyOf(secret: string): string | null {
  if (!secret.startsWith(ED25519_SECRET_PREFIX)) return null;
  const spki = createPublicKey(ed25519PrivateKey(secret)).export({ format: 'der', type: 'spki' });
  return `${ED25519_PUBLIC_PREFIX}${spki.subarray(SPKI_ED25519.length).toString('base64')}`;
}

/** How far a request's `webhook-timestamp` may be from the receiver's clock (Standard Webhooks' tolerance). */
export const TIMESTAMP_TOLERANCE_S = 5 * 60;

/**
 * Whether one of the space-separated signatures of a `webhook-signature` header signs `{id}.{timestamp}.{body}`
 * under `secret`: a `whsec_` secret checks `v1,` signatures (HMAC-SHA256, as signPayload makes them), a
 * `whpk_` public key checks `v1a,` ones (Ed25519). The timestamp's freshness is the caller's to check.
 */
export function signatureVerifies(
  secret: string,
  msgId: string,
  timestampSeconds: number,
  body: string,
  signatureHeader: string,
): boolean {
  const signatures = signatureHeader.split(' ').filter((part) => part.length > 0);
  if (secret.startsWith(ED25519_PUBLIC_PREFIX)) {
    const raw = Buffer.from(secret.slice(ED25519_PUBLIC_PREFIX.length), 'base64');
    const key = createPublicKey({ key: Buffer.concat([SPKI_ED25519, raw]), format: 'der', type: 'spki' });
    const signed = Buffer.from(`${msgId}.${timestampSeconds}.${body}`);
    return signatures.some(
      (part) => part.startsWith('v1a,') && verify(null, signed, key, Buffer.from(part.slice(4), 'base64')),
    );
  }
  const expected = Buffer.from(signPayload(secret, msgId, timestampSeconds, body));
  return signatures.some((part) => {
    const given = Buffer.from(part);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

// --- Encryption at rest for signing secrets: AES-256-GCM under a key derived from HERALD_SECRET_KEY.

/** The AES-256-GCM key of a master key (HERALD_SECRET_KEY). */
function boxKey(masterKey: string): Buffer {
  return createHash('sha256').update('herald-secret-box\0').update(masterKey).digest();
}

/**
 * Seals with the current master key; opens what the current key or any previous one sealed
 * (HERALD_SECRET_KEY_PREVIOUS), so a new key can take over while `herald secrets reseal` catches up.
 */
export class SecretBox {
  private readonly key: Buffer;
  private readonly previous: Buffer[];
  /**
   * Opened secrets by their sealed text. Every claimed attempt opens its endpoint's secrets, and AES-GCM
   * per attempt costs a few percent of a worker's time. A sealed text never changes
   * (a rotation seals anew, under a new IV), so an entry never goes stale.
   */
  private readonly opened = new LRUCache<string, string>({ max: OPENED_SECRETS_KEPT });

  constructor(masterKey: string, previousKeys: readonly string[] = []) {
    this.key = boxKey(masterKey);
    this.previous = previousKeys.map(boxKey);
  }

  /** Whether the current master key sealed this text (what reseal leaves alone). */
  sealedWithCurrentKey(sealed: string): boolean {
    try {
      this.decryptWith(this.key, sealed);
      return true;
    } catch {
      return false;
    }
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
    // Bounded whatever the number of endpoints: the least recently used go first.
    this.opened.set(sealed, plaintext);
    return plaintext;
  }

  private decrypt(sealed: string): string {
    for (const key of [this.key, ...this.previous]) {
      try {
        return this.decryptWith(key, sealed);
      } catch {
        // Sealed under another key: the next one may open it.
      }
    }
    throw new Error('unreadable sealed secret: sealed under a master key this process does not have');
  }

  private decryptWith(key: Buffer, sealed: string): string {
    const [version, iv, tag, body] = sealed.split(':');
    if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('unreadable sealed secret');
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
  }
}

/** The signing secrets an attempt signs with: the current one, and the rotated-out ones still in their grace. */
export interface SigningSecrets {
  current: string;
  /** Newest first. */
  previous: string[];
}
