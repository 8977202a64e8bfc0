import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  generateSigningKey,
  publicKeyOf,
  SecretBox,
  signatureVerifies,
  signPayload,
} from '../../../src/domain/secrets.js';

// Signing secrets sealed at rest (AES-256-GCM). A box keeps what it opened, by the whole sealed text:
// that must never let a text through that its key would refuse.

test('a box opens what it sealed, again and again, and past the number of secrets it keeps opened', () => {
  const box = new SecretBox('master-key-one');
  const secrets = Array.from({ length: 5_000 }, (_, i) => `whsec_secret-${i}`);
  const sealed = secrets.map((secret) => box.seal(secret));
  for (let round = 0; round < 2; round++) {
    for (const [i, text] of sealed.entries()) assert.equal(box.open(text), secrets[i]);
  }
  assert.notEqual(box.seal(secrets[0]!), sealed[0], 'sealing again uses a new IV');
});

test('what one box opened, a box under another key still refuses, and a tampered text is refused', () => {
  const box = new SecretBox('master-key-one');
  const other = new SecretBox('master-key-two');
  const sealed = box.seal('whsec_c2VjcmV0');
  assert.equal(box.open(sealed), 'whsec_c2VjcmV0');
  assert.throws(() => other.open(sealed), 'another key cannot open it');
  const [version, iv, tag, body] = sealed.split(':') as [string, string, string, string];
  const changed = (text: string) => (text.startsWith('A') ? 'B' : 'A') + text.slice(1);
  assert.throws(
    () => box.open([version, iv, tag, changed(body)].join(':')),
    'a changed body fails its authentication tag',
  );
  assert.throws(() => box.open([version, iv, changed(tag), body].join(':')), 'a changed tag fails');
  assert.equal(box.open(sealed), 'whsec_c2VjcmV0', 'the original still opens');
});

test('signatureVerifies: the Standard Webhooks known answer, any of several signatures, and Ed25519 v1a', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const known = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';
  const [id, at, body] = ['msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}'];
  assert.equal(signatureVerifies(secret, id, at, body, known), true);
  assert.equal(signatureVerifies(secret, id, at, body, `v1,c29tZXRoaW5nIGVsc2U= ${known}`), true);
  assert.equal(signatureVerifies(secret, id, at + 1, body, known), false);
  assert.equal(signatureVerifies(secret, id, at, `${body} `, known), false);
  assert.equal(signatureVerifies('whsec_c29tZXRoaW5nIGVsc2UgZW50aXJlbHkh', id, at, body, known), false);

  const signingKey = generateSigningKey('ed25519');
  const publicKey = publicKeyOf(signingKey)!;
  const signed = signPayload(signingKey, id, at, body);
  assert.equal(signatureVerifies(publicKey, id, at, body, signed), true);
  assert.equal(signatureVerifies(publicKey, id, at, '{}', signed), false);
  assert.equal(signatureVerifies(publicKeyOf(generateSigningKey('ed25519'))!, id, at, body, signed), false);
});
