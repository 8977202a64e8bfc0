import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { generateSigningKey, publicKeyOf, signPayload } from '../../../src/domain/secrets.js';

// Ed25519 signing keys (Standard Webhooks v1a), checked against RFC 8032's first test vector and against
// node:crypto keys built here another way (JWK), so the expected signature is computed independently.

const RFC_SEED = Buffer.from('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60', 'hex');
const RFC_PUBLIC = Buffer.from('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a', 'hex');
const RFC_EMPTY_SIGNATURE =
  'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b';
const whsk = `whsk_${RFC_SEED.toString('base64')}`;

/** The RFC's key pair as node:crypto keys, from JWK rather than the DER prefixes the service uses. */
const jwk = { kty: 'OKP', crv: 'Ed25519', d: RFC_SEED.toString('base64url'), x: RFC_PUBLIC.toString('base64url') };
const privateKey = createPrivateKey({ key: jwk, format: 'jwk' });
const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' });

test('the known-answer vector: RFC 8032 test 1 through JWK keys, and the service signs the same bytes alike', () => {
  assert.equal(sign(null, Buffer.alloc(0), privateKey).toString('hex'), RFC_EMPTY_SIGNATURE, 'the vector itself');
  assert.equal(publicKeyOf(whsk), `whpk_${RFC_PUBLIC.toString('base64')}`);
  const id = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
  const body = '{"test": 2432232314}';
  const expected = sign(null, Buffer.from(`${id}.1614265330.${body}`), privateKey).toString('base64');
  assert.equal(signPayload(whsk, id, 1614265330, body), `v1a,${expected}`);
  const signature = Buffer.from(signPayload(whsk, id, 1614265330, body).slice(4), 'base64');
  assert.equal(signature.length, 64);
  assert.ok(verify(null, Buffer.from(`${id}.1614265330.${body}`), publicKey, signature));
  assert.ok(!verify(null, Buffer.from(`${id}.1614265331.${body}`), publicKey, signature), 'another timestamp');
});

test('new keys: whsk_ of a 32-byte seed with a whpk_ of 32 bytes; HMAC secrets keep v1 and have no public key', () => {
  const key = generateSigningKey('ed25519');
  assert.match(key, /^whsk_[A-Za-z0-9+/]{43}=$/);
  assert.equal(Buffer.from(publicKeyOf(key)!.slice(5), 'base64').length, 32);
  assert.notEqual(generateSigningKey('ed25519'), key);
  const hmac = generateSigningKey('hmac');
  assert.match(hmac, /^whsec_/);
  assert.equal(publicKeyOf(hmac), null);
  assert.match(signPayload(hmac, 'msg_1', 1, '{}'), /^v1,/);
});
