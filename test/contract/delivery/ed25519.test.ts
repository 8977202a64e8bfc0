import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey, verify } from 'node:crypto';
import { setup, startReceiver } from '../../support/delivery.js';
import type { Received } from '../../support/receiver.js';
import { assertError } from '../../support/api.js';

// Endpoints with `signature_type: "ed25519"` (Standard Webhooks v1a): the private key stays with Herald,
// reads show the public key, receivers verify with node:crypto alone, and a rotation's grace signs with both.

/** A receiver's check, as docs/receivers.md shows it: node:crypto and the endpoint's whpk_ key only. */
function verifiesV1a(request: Received, whpk: string): boolean {
  const raw = Buffer.from(whpk.slice('whpk_'.length), 'base64');
  const key = createPublicKey({
    key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), raw]),
    format: 'der',
    type: 'spki',
  });
  const signed = Buffer.from(
    `${request.headers['webhook-id']}.${request.headers['webhook-timestamp']}.${request.body}`,
  );
  return String(request.headers['webhook-signature'])
    .split(' ')
    .some((part) => part.startsWith('v1a,') && verify(null, signed, key, Buffer.from(part.slice(4), 'base64')));
}

test('an ed25519 endpoint: public_key on reads, no secret shown, v1a signatures that node:crypto verifies, both keys during a rotation', async (t) => {
  const s = await setup(t);
  const receiver = await startReceiver(t);
  const created = await s.api.post('/api/v1/endpoints', {
    app_id: s.appId,
    url: `${receiver.url}/ed`,
    signature_type: 'ed25519',
  });
  assert.equal(created.status, 201);
  assert.equal(created.body.signature_type, 'ed25519');
  assert.match(created.body.public_key, /^whpk_[A-Za-z0-9+/]{43}=$/);
  assert.equal(created.body.signing_secret, undefined, 'the private key is never shown');
  const read = await s.api.get(`/api/v1/endpoints/${created.body.id}`);
  assert.equal(read.body.public_key, created.body.public_key);
  const [row] = await s.service.store.ctx.db
    .selectFrom('endpoints')
    .selectAll()
    .where('id', '=', created.body.id)
    .execute();
  assert.ok(!row!.secret_sealed.startsWith('whsk_'), 'the private key is stored sealed');

  await s.emit({ n: 1 });
  await receiver.waitFor(1);
  const first = receiver.received[0]!;
  assert.match(String(first.headers['webhook-signature']), /^v1a,[A-Za-z0-9+/]{86}==$/);
  assert.ok(verifiesV1a(first, created.body.public_key));

  const rotated = await s.api.post(`/api/v1/endpoints/${created.body.id}/rotate-secret`);
  assert.equal(rotated.status, 200);
  assert.match(rotated.body.public_key, /^whpk_/);
  assert.notEqual(rotated.body.public_key, created.body.public_key);
  assert.equal(rotated.body.signing_secret, undefined);
  assert.equal((await s.api.get(`/api/v1/endpoints/${created.body.id}`)).body.public_key, rotated.body.public_key);
  await s.emit({ n: 2 });
  await receiver.waitFor(2);
  const second = receiver.received[1]!;
  const parts = String(second.headers['webhook-signature']).split(' ');
  assert.equal(parts.length, 2, 'the new key and the one in its grace both sign');
  assert.ok(verifiesV1a(second, rotated.body.public_key));
  assert.ok(verifiesV1a(second, created.body.public_key));
});

test('signature_type: hmac by default with no public key; an unknown type is 400; it cannot change after creation', async (t) => {
  const s = await setup(t);
  const hmac = await s.api.post('/api/v1/endpoints', { app_id: s.appId, url: 'http://127.0.0.1:9/h' });
  assert.equal(hmac.body.signature_type, 'hmac');
  assert.equal(hmac.body.public_key, null);
  assert.match(hmac.body.signing_secret, /^whsec_/);
  const before = (await s.api.get(`/api/v1/endpoints?app_id=${s.appId}`)).body.data.length;
  assertError(
    await s.api.post('/api/v1/endpoints', { app_id: s.appId, url: 'http://127.0.0.1:9/h', signature_type: 'rsa' }),
    400,
    'invalid_request',
    /signature_type/,
  );
  assert.equal((await s.api.get(`/api/v1/endpoints?app_id=${s.appId}`)).body.data.length, before);
  assertError(
    await s.api.patch(`/api/v1/endpoints/${hmac.body.id}`, { signature_type: 'ed25519' }),
    400,
    'invalid_request',
    /signature_type/,
  );
  assert.equal((await s.api.get(`/api/v1/endpoints/${hmac.body.id}`)).body.signature_type, 'hmac');
});
