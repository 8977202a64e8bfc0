import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';
import { resealedUnderNewKey, setup, verifies } from '../../support/delivery.js';
import { assertError } from '../../support/api.js';
import { makeCa } from '../../support/certificates.js';
import { TlsReceiver } from '../../support/tls-receiver.js';
import { ForwardProxy } from '../../support/forward-proxy.js';

/** The master key test services run with (test/support/service.ts). */

// An endpoint's `tls` (decisions: "Enterprise receivers"): a client certificate and key for receivers that
// demand mutual TLS, and a CA bundle for receivers whose certificate a private CA issued. The key is
// sealed at rest and redacted on reads; reads show the certificate's expiry. Certificates are made with
// openssl; the receiver is a real https server on loopback that refuses a handshake without the client
// certificate its CA issued.

const serverCa = makeCa('Receiver private CA');
const clientCa = makeCa('Receiver client CA');
const otherCa = makeCa('Someone else');
const serverIdentity = serverCa.issue('receiver.test', 'server');
const client = clientCa.issue('herald-client', 'client', 30);
const stranger = otherCa.issue('herald-client', 'client');

/** The base64 of a PEM key: what must never be shown. */
const keyBody = (pem: string) => pem.split('\n').slice(1, -2).join('');

async function mtlsReceiver(t: TestContext): Promise<TlsReceiver> {
  const receiver = await new TlsReceiver(serverIdentity, clientCa.cert).start();
  t.after(() => receiver.stop());
  return receiver;
}

test('an endpoint with a client certificate is delivered to a receiver that demands it; the key is sealed and redacted', async (t) => {
  const s = await setup(t);
  const receiver = await mtlsReceiver(t);
  const created = await s.api.post('/api/v1/endpoints', {
    app_id: s.appId,
    url: `${receiver.url}/hook`,
    tls: { client_cert: client.cert, client_key: client.key, ca: serverCa.cert },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const expected = {
    client_cert: client.cert,
    client_key: '<redacted>',
    ca: serverCa.cert,
    client_cert_not_after: created.body.tls.client_cert_not_after,
  };
  assert.deepEqual(created.body.tls, expected);
  const notAfter = Date.parse(created.body.tls.client_cert_not_after);
  assert.ok(Math.abs(notAfter - (Date.now() + 30 * 86_400_000)) < 600_000, 'the certificate expires in 30 days');
  for (const read of [
    await s.api.get(`/api/v1/endpoints/${created.body.id}`),
    await s.api.get(`/api/v1/endpoints?app_id=${s.appId}`),
  ]) {
    assert.ok(!JSON.stringify(read.body).includes(keyBody(client.key)), 'no read holds the key');
  }
  assert.deepEqual((await s.api.get(`/api/v1/endpoints/${created.body.id}`)).body.tls, expected);
  const row = await s.service.store.ctx.db
    .selectFrom('endpoints')
    .selectAll()
    .where('id', '=', created.body.id)
    .executeTakeFirstOrThrow();
  assert.ok(row.tls_client_key_sealed && !row.tls_client_key_sealed.includes(keyBody(client.key)), 'sealed at rest');
  assert.equal(s.service.store.endpoints.tlsKey(row), client.key, 'and opens to the key given');

  await s.emit({ n: 1 });
  const first = await s.until(
    (await s.api.get(`/api/v1/endpoints/${created.body.id}`)).body && (await lastDelivery(s)),
    (d) => d.status === 'success',
    'delivered over mutual TLS',
  );
  assert.equal(first.attempts[0]!.response_status, 200);
  assert.equal(receiver.received.length, 1);
  assert.equal(receiver.received[0]!.clientName, 'herald-client');
  assert.ok(
    verifies(
      { ...receiver.received[0]!, headers: receiver.received[0]!.headers as never, at: 0 },
      created.body.signing_secret,
    ),
  );

  // An update that sends the key back as "<redacted>" keeps it; null removes the settings.
  const kept = await s.api.patch(`/api/v1/endpoints/${created.body.id}`, {
    tls: { client_cert: client.cert, client_key: '<redacted>', ca: serverCa.cert },
  });
  assert.equal(kept.status, 200, JSON.stringify(kept.body));
  const again = await s.emit({ n: 2 });
  await s.until(again.deliveryIds[0]!, (d) => d.status === 'success', 'still delivered with the kept key');
  assert.equal(receiver.received.at(-1)!.clientName, 'herald-client');
  const removed = await s.api.patch(`/api/v1/endpoints/${created.body.id}`, { tls: null });
  assert.equal(removed.body.tls, null);
  const gone = await s.service.store.ctx.db
    .selectFrom('endpoints')
    .selectAll()
    .where('id', '=', created.body.id)
    .executeTakeFirstOrThrow();
  assert.equal(gone.tls_client_key_sealed, null);
});

async function lastDelivery(s: Awaited<ReturnType<typeof setup>>): Promise<string> {
  const messages = await s.api.get(`/api/v1/messages?app_id=${s.appId}&limit=1`);
  const deliveries = await s.api.get(`/api/v1/messages/${messages.body.data[0].id}/deliveries`);
  return deliveries.body.data[0].id;
}

test('without the client certificate, with one from another CA, or without the private CA: a recorded TLS failure', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s' });
  const receiver = await mtlsReceiver(t);
  const cases = {
    'no client certificate': { ca: serverCa.cert },
    "another CA's certificate": { client_cert: stranger.cert, client_key: stranger.key, ca: serverCa.cert },
    'the private CA not trusted': { client_cert: client.cert, client_key: client.key },
  };
  const byEndpoint = new Map<string, string>();
  for (const [name, tls] of Object.entries(cases))
    byEndpoint.set((await s.endpoint(`${receiver.url}/${encodeURIComponent(name)}`, { tls })).id, name);
  const emitted = await s.emit();
  const errors: Record<string, string> = {};
  for (const id of emitted.deliveryIds) {
    const d = await s.until(id, (read) => read.status === 'failed', 'failed');
    assert.equal(d.attempts[0]!.response_status, null);
    errors[byEndpoint.get(d.endpoint_id)!] = d.attempts[0]!.error ?? '';
  }
  assert.equal(receiver.received.length, 0, 'no request got through');
  for (const name of ['no client certificate', "another CA's certificate"])
    assert.match(errors[name]!, /certificate|alert|socket|reset|ssl|tls/i, `${name}: ${errors[name]}`);
  assert.match(errors['the private CA not trusted']!, /certificate/i, errors['the private CA not trusted']);
  assert.ok(receiver.refused.length >= 2, `the receiver refused the handshakes: ${receiver.refused.join('; ')}`);
});

test('a client certificate goes through the egress proxy inside its CONNECT tunnel', async (t) => {
  const proxy = await new ForwardProxy().start();
  t.after(() => proxy.stop());
  const s = await setup(t, { HERALD_OUTBOUND_PROXY: proxy.url });
  const receiver = await mtlsReceiver(t);
  await s.endpoint(`${receiver.url}/tunnelled`, {
    tls: { client_cert: client.cert, client_key: client.key, ca: serverCa.cert },
  });
  const { deliveryIds } = await s.emit();
  await s.until(deliveryIds[0]!, (d) => d.status === 'success', 'delivered through the tunnel');
  assert.equal(receiver.received[0]!.clientName, 'herald-client');
  assert.ok(proxy.log.some((e) => e.method === 'CONNECT' && e.target === new URL(receiver.url).host));
});

test('bad TLS settings are 400 naming the field, and nothing is stored', async (t) => {
  const s = await setup(t);
  const url = 'https://127.0.0.1:9/h';
  const before = (await s.api.get(`/api/v1/endpoints?app_id=${s.appId}`)).body.data.length;
  const other = serverCa.issue('other', 'client');
  const encrypted = '-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIGHAgEAMBMG\n-----END ENCRYPTED PRIVATE KEY-----\n';
  for (const [tls, message] of [
    [{ client_cert: 'not a pem', client_key: client.key }, /tls\.client_cert must be PEM certificates/],
    [{ client_cert: client.cert.replace(/[A-Za-z]{10}/, 'AAAAAAAAAA'), client_key: client.key }, /tls\.client_cert/],
    [{ client_cert: client.cert, client_key: 'garbage' }, /tls\.client_key must be one PEM private key/],
    [{ client_cert: client.cert, client_key: other.key }, /tls\.client_key does not match tls\.client_cert/],
    [{ client_cert: client.cert }, /tls\.client_cert needs tls\.client_key/],
    [{ client_key: client.key }, /tls\.client_key needs tls\.client_cert/],
    [{ client_cert: client.cert, client_key: encrypted }, /tls\.client_key is encrypted/],
    [{ ca: 'nope' }, /tls\.ca must be PEM certificates/],
    [{ ca: client.key }, /tls\.ca must be PEM certificates/],
    [{}, /tls must have/],
    [
      { client_cert: client.cert, client_key: '<redacted>' },
      /tls\.client_key is "<redacted>" but the endpoint has no client key/,
    ],
    [{ clientCert: client.cert }, /tls/],
  ] as [Record<string, unknown>, RegExp][]) {
    const reply = await s.api.post('/api/v1/endpoints', { app_id: s.appId, url, tls });
    assertError(reply, 400, 'invalid_request', message);
    const text = JSON.stringify(reply.body);
    assert.ok(
      !text.includes(keyBody(client.key)) && !text.includes(keyBody(other.key)),
      'the error does not echo a key',
    );
  }
  assert.equal((await s.api.get(`/api/v1/endpoints?app_id=${s.appId}`)).body.data.length, before);
  // On update too, leaving the stored settings as they were.
  const made = await s.endpoint(url, { tls: { ca: serverCa.cert } });
  assertError(
    await s.api.patch(`/api/v1/endpoints/${made.id}`, { tls: { client_cert: client.cert, client_key: other.key } }),
    400,
    'invalid_request',
    /tls\.client_key does not match/,
  );
  assert.deepEqual((await s.api.get(`/api/v1/endpoints/${made.id}`)).body.tls, {
    client_cert: null,
    client_key: null,
    ca: serverCa.cert,
    client_cert_not_after: null,
  });
});

/** A new private key of `kind` as unencrypted PKCS #8 PEM. */
async function newKey(kind: 'rsa' | 'ec' | 'ed25519' | 'dsa', bits = 2048): Promise<string> {
  const options = {
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  };
  const make = promisify(generateKeyPair) as (kind: string, options: object) => Promise<{ privateKey: string }>;
  const params = kind === 'ec' ? { namedCurve: 'P-256' } : kind === 'ed25519' ? {} : { modulusLength: bits };
  return (await make(kind, { ...params, ...options })).privateKey;
}

test('a client key costlier to sign with than RSA 4096 is 400 naming its size; RSA 4096, EC and Ed25519 keys are taken', async (t) => {
  const s = await setup(t);
  const url = 'https://127.0.0.1:9/h';
  // 4104 bits: the smallest RSA modulus over the bound (a multiple of 8), quick to generate.
  const [over, rsa4096, ec, ed25519, dsa] = await Promise.all([
    newKey('rsa', 4104),
    newKey('rsa', 4096),
    newKey('ec'),
    newKey('ed25519'),
    newKey('dsa', 2048),
  ]);
  const before = (await s.api.get(`/api/v1/endpoints?app_id=${s.appId}`)).body.data.length;
  const big = clientCa.issue('big-key', 'client', 2, over);
  assertError(
    await s.api.post('/api/v1/endpoints', {
      app_id: s.appId,
      url,
      tls: { client_cert: big.cert, client_key: big.key },
    }),
    400,
    'invalid_request',
    /^tls\.client_key is an RSA key of 4104 bits; at most 4096$/,
  );
  const dsaCert = clientCa.issue('dsa-key', 'client', 2, dsa);
  assertError(
    await s.api.post('/api/v1/endpoints', {
      app_id: s.appId,
      url,
      tls: { client_cert: dsaCert.cert, client_key: dsa },
    }),
    400,
    'invalid_request',
    /tls\.client_key is a key of type dsa/,
  );
  assert.equal((await s.api.get(`/api/v1/endpoints?app_id=${s.appId}`)).body.data.length, before, 'nothing stored');
  for (const [name, key] of [
    ['RSA 4096', rsa4096],
    ['EC P-256', ec],
    ['Ed25519', ed25519],
  ] as const) {
    const issued = clientCa.issue(name, 'client', 2, key);
    const made = await s.api.post('/api/v1/endpoints', {
      app_id: s.appId,
      url,
      tls: { client_cert: issued.cert, client_key: issued.key },
    });
    assert.equal(made.status, 201, `${name}: ${JSON.stringify(made.body)}`);
    // An update to the oversized key is refused too, and keeps the key stored.
    assertError(
      await s.api.patch(`/api/v1/endpoints/${made.body.id}`, { tls: { client_cert: big.cert, client_key: big.key } }),
      400,
      'invalid_request',
      /tls\.client_key is an RSA key of 4104 bits/,
    );
    const row = await s.service.store.ctx.db
      .selectFrom('endpoints')
      .selectAll()
      .where('id', '=', made.body.id)
      .executeTakeFirstOrThrow();
    assert.equal(s.service.store.endpoints.tlsKey(row), key, `${name}: the key stays`);
  }
});

test('reseal seals the client key and the OAuth2 client secret under a new master key', async (t) => {
  const s = await setup(t);
  const made = await s.endpoint('https://127.0.0.1:9/h', {
    tls: { client_cert: client.cert, client_key: client.key },
    auth: {
      type: 'oauth2_client_credentials',
      token_url: 'https://127.0.0.1:9/token',
      client_id: 'id',
      client_secret: 'reseal-s3cret',
    },
  });
  const { resealed, row, opener } = await resealedUnderNewKey(s, made.id);
  assert.equal(resealed, 1);
  assert.equal(opener.tlsKey(row), client.key);
  assert.equal(opener.authSecret(row), 'reseal-s3cret');
});
