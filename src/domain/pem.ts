import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { REDACTED } from './headers.js';

// An endpoint's TLS settings (decisions: "Enterprise receivers", `tls`): a client certificate and its
// private key for receivers that demand mutual TLS, and a CA bundle that replaces the default trusted
// roots for a receiver whose certificate a private CA issued. Each is PEM text; the certificate and the
// key come together, and the key must be the certificate's.

/** Longest PEM text taken for one field (a certificate chain or a CA bundle of a few dozen certificates). */
export const MAX_PEM_CHARS = 64 * 1024;
/**
 * Largest RSA client key taken, in bits. Every full handshake signs with the key on the event loop, and an
 * RSA signature's cost grows with the cube of the modulus: 4096 bits is a few milliseconds, 16384 bits a
 * few hundred, which would stall every other attempt of the worker.
 */
export const MAX_RSA_KEY_BITS = 4096;

export interface TlsInput {
  client_cert?: string | null | undefined;
  client_key?: string | null | undefined;
  ca?: string | null | undefined;
}

/** TLS settings as stored: what is given, with the client certificate's expiry. */
export interface TlsSettings {
  clientCert: string | null;
  clientKey: string | null;
  ca: string | null;
  /** The client certificate's notAfter (ms since the epoch); null without one. */
  clientCertNotAfter: number | null;
}

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;
/** PEM's armour around any block: text outside it (comments, bag attributes) is allowed, as OpenSSL allows it. */
const ANY_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----/g;

/** The certificates of a PEM text, or why it is not one or more certificates (naming `field`). */
function certificates(field: string, text: string): X509Certificate[] | string {
  if (text.length > MAX_PEM_CHARS) return `${field} is longer than ${MAX_PEM_CHARS} characters`;
  const blocks = text.match(CERTIFICATE_BLOCK) ?? [];
  const kinds = [...text.matchAll(ANY_BLOCK)].map((match) => match[1]);
  if (blocks.length === 0 || kinds.some((kind) => kind !== 'CERTIFICATE'))
    return `${field} must be PEM certificates (-----BEGIN CERTIFICATE----- blocks)`;
  const parsed: X509Certificate[] = [];
  for (const [i, block] of blocks.entries()) {
    try {
      parsed.push(new X509Certificate(block));
    } catch {
      return `${field}: certificate ${i + 1} is not a valid X.509 certificate`;
    }
  }
  return parsed;
}

/** The private key of a PEM text, or why it is not one (an encrypted key cannot be used: there is no passphrase). */
function privateKey(text: string): KeyObject | string {
  if (text.length > MAX_PEM_CHARS) return `tls.client_key is longer than ${MAX_PEM_CHARS} characters`;
  const kinds = [...text.matchAll(ANY_BLOCK)].map((match) => match[1]);
  if (kinds.includes('ENCRYPTED PRIVATE KEY') || /Proc-Type: 4,ENCRYPTED/.test(text))
    return 'tls.client_key is encrypted: give the key without a passphrase (it is sealed at rest)';
  if (kinds.length !== 1 || !/PRIVATE KEY$/.test(kinds[0]!))
    return 'tls.client_key must be one PEM private key (-----BEGIN PRIVATE KEY----- or RSA/EC PRIVATE KEY)';
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: text, format: 'pem' });
  } catch {
    return 'tls.client_key is not a valid PEM private key';
  }
  return keyKindProblem(key) ?? key;
}

/**
 * Why a client key's kind or size is refused, or null: RSA (PKCS #1 or PSS) of at most MAX_RSA_KEY_BITS
 * bits, EC and Ed25519 keys sign a handshake in a few milliseconds at most; other kinds are refused.
 */
function keyKindProblem(key: KeyObject): string | null {
  const kind = key.asymmetricKeyType;
  if (kind === 'rsa' || kind === 'rsa-pss') {
    const bits = key.asymmetricKeyDetails?.modulusLength ?? Number.POSITIVE_INFINITY;
    return bits <= MAX_RSA_KEY_BITS
      ? null
      : `tls.client_key is an RSA key of ${bits} bits; at most ${MAX_RSA_KEY_BITS}`;
  }
  if (kind === 'ec' || kind === 'ed25519') return null;
  return `tls.client_key is a key of type ${kind ?? 'unknown'}; give an RSA key of at most ${MAX_RSA_KEY_BITS} bits, an EC key or an Ed25519 key`;
}

/**
 * Checks TLS settings and returns them as stored, or why they cannot be an endpoint's, naming the field.
 * `storedKey` is the key kept so far: a client_key of REDACTED (as reads show it) stands for it.
 */
export function checkedTls(input: TlsInput, storedKey: string | null = null): TlsSettings | string {
  const given = (value: string | null | undefined) => (value === undefined || value === null ? null : value);
  const cert = given(input.client_cert);
  let key = given(input.client_key);
  const ca = given(input.ca);
  if (key === REDACTED) {
    if (storedKey === null) return 'tls.client_key is "<redacted>" but the endpoint has no client key to keep';
    key = storedKey;
  }
  if (cert === null && key === null && ca === null)
    return 'tls must have client_cert and client_key, or ca, or all three (null removes the TLS settings)';
  if ((cert === null) !== (key === null))
    return cert === null ? 'tls.client_key needs tls.client_cert' : 'tls.client_cert needs tls.client_key';
  let notAfter: number | null = null;
  if (cert !== null && key !== null) {
    const chain = certificates('tls.client_cert', cert);
    if (typeof chain === 'string') return chain;
    const keyObject = privateKey(key);
    if (typeof keyObject === 'string') return keyObject;
    if (!chain[0]!.checkPrivateKey(keyObject)) return 'tls.client_key does not match tls.client_cert';
    notAfter = Date.parse(chain[0]!.validTo);
  }
  if (ca !== null) {
    const bundle = certificates('tls.ca', ca);
    if (typeof bundle === 'string') return bundle;
  }
  return { clientCert: cert, clientKey: key, ca, clientCertNotAfter: Number.isFinite(notAfter) ? notAfter : null };
}

/** An endpoint's TLS settings as an attempt uses them (node:tls names, key opened); `ca` replaces the default roots. */
export interface ReceiverTls {
  cert?: string | undefined;
  key?: string | undefined;
  ca?: string | undefined;
}
