import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SecretBox } from '../../src/domain/secrets.js';

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
