import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign } from 'node:crypto';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook, WebhookVerificationError } from '../src/index.js';

// Webhook verification on its own: the Standard Webhooks known answer, signatures made by the
// `standardwebhooks` library and by node:crypto's Ed25519, and every way a request must be refused.
// (test/client.test.ts verifies requests Herald itself sent.)

const refused = (promise: Promise<unknown>, message: RegExp) =>
  assert.rejects(promise, (error: unknown) => error instanceof WebhookVerificationError && message.test(error.message));

describe('Webhook with a whsec_ secret (v1, HMAC-SHA256)', () => {
  // From the Standard Webhooks libraries' own tests (../shared/guide/engineering.md).
  const known = {
    secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
    timestamp: 1614265330,
    body: '{"test": 2432232314}',
    signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
  };
  const headersOf = (signature: string, timestamp = known.timestamp, id = known.id) => ({
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signature,
  });
  const at = { now: known.timestamp * 1000 };

  test('accepts the known answer and returns the parsed body', async () => {
    const event = await new Webhook(known.secret).verify(known.body, headersOf(known.signature), at);
    assert.deepEqual(event, { test: 2432232314 });
  });

  test('takes the body as bytes and the headers as a fetch Headers, any case', async () => {
    const bytes = new TextEncoder().encode(known.body);
    const headers = new Headers({
      'Webhook-Id': known.id,
      'WEBHOOK-TIMESTAMP': String(known.timestamp),
      'Webhook-Signature': known.signature,
    });
    assert.deepEqual(await new Webhook(known.secret).verify(bytes, headers, at), { test: 2432232314 });
    assert.deepEqual(await new Webhook(known.secret).verify(bytes.buffer, headers, at), { test: 2432232314 });
  });

  test('accepts any one matching signature of several, whatever the others are', async () => {
    const others = ['v1,Zm9vYmFy', 'v1a,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=', 'v2,abc', 'garbage', 'v1,!!!'];
    const signature = [...others, known.signature].join(' ');
    assert.deepEqual(await new Webhook(known.secret).verify(known.body, headersOf(signature), at), {
      test: 2432232314,
    });
  });

  test('refuses a changed body, id or timestamp, another secret, and a signature of another scheme', async () => {
    const webhook = new Webhook(known.secret);
    await refused(webhook.verify('{"test": 2432232315}', headersOf(known.signature), at), /No matching signature/);
    await refused(webhook.verify(known.body, headersOf(known.signature, known.timestamp, 'msg_x'), at), /No matching/);
    await refused(
      webhook.verify(known.body, headersOf(known.signature, known.timestamp + 1), {
        now: (known.timestamp + 1) * 1000,
      }),
      /No matching signature/,
    );
    await refused(
      new Webhook('whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA').verify(known.body, headersOf(known.signature), at),
      /No matching signature/,
    );
    await refused(webhook.verify(known.body, headersOf(known.signature.replace('v1,', 'v1a,')), at), /No matching/);
    // The right signature cut short or lengthened is not the signature.
    await refused(webhook.verify(known.body, headersOf(known.signature.slice(0, -4)), at), /No matching/);
    await refused(webhook.verify(known.body, headersOf(`${known.signature.slice(0, -1)}AAAA`), at), /No matching/);
  });

  test('refuses a timestamp more than five minutes away, either way, and a missing or malformed header', async () => {
    const webhook = new Webhook(known.secret);
    const ok = (offsetSeconds: number) =>
      webhook.verify(known.body, headersOf(known.signature), { now: (known.timestamp + offsetSeconds) * 1000 });
    await ok(300);
    await ok(-300);
    await refused(ok(301), /too old/);
    await refused(ok(-301), /too new/);
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      const headers: Record<string, string> = headersOf(known.signature);
      delete headers[name];
      await refused(webhook.verify(known.body, headers, at), /Missing required headers/);
    }
    await refused(
      webhook.verify(known.body, { ...headersOf(known.signature), 'webhook-timestamp': '1e9' }, at),
      /Invalid/,
    );
  });

  test('accepts what the standardwebhooks library signs, now, and refuses what it signed 6 minutes ago', async () => {
    const secret = `whsec_${Buffer.from('a 24-byte signing secret').toString('base64')}`;
    const signer = new StandardWebhook(secret);
    const body = JSON.stringify({ type: 'invoice.paid', data: { amount: 4200, note: 'crème brûlée ✓' } });
    const now = new Date();
    const headers = headersOf(signer.sign('evt_1', now, body), Math.floor(now.getTime() / 1000), 'evt_1');
    assert.deepEqual(await new Webhook(secret).verify(body, headers), JSON.parse(body));
    // And the library accepts what this one accepts.
    assert.deepEqual(signer.verify(body, headers), JSON.parse(body));
    const old = new Date(now.getTime() - 6 * 60_000);
    const oldHeaders = headersOf(signer.sign('evt_1', old, body), Math.floor(old.getTime() / 1000), 'evt_1');
    await refused(new Webhook(secret).verify(body, oldHeaders), /too old/);
  });

  test('refuses a key that is neither whsec_ nor whpk_', () => {
    assert.throws(() => new Webhook('sk_test_abc'), TypeError);
    assert.throws(() => new Webhook('whsec_***'), TypeError);
    assert.throws(() => new Webhook('whpk_AAAA'), TypeError);
  });
});

describe('Webhook with a whpk_ public key (v1a, Ed25519)', () => {
  const pair = () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12);
    return { privateKey, publicKey: `whpk_${raw.toString('base64')}` };
  };
  const signed = (privateKey: ReturnType<typeof pair>['privateKey'], id: string, timestamp: number, body: string) =>
    `v1a,${sign(null, Buffer.from(`${id}.${timestamp}.${body}`), privateKey).toString('base64')}`;

  test("accepts a signature of the key's private half among others, and refuses another key's", async () => {
    const ours = pair();
    const theirs = pair();
    const timestamp = Math.floor(Date.now() / 1000);
    const body = '{"type":"invoice.paid","data":{}}';
    const headers = (signature: string) => ({
      'webhook-id': 'evt_2',
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signature,
    });
    const good = signed(ours.privateKey, 'evt_2', timestamp, body);
    const bad = signed(theirs.privateKey, 'evt_2', timestamp, body);
    const webhook = new Webhook(ours.publicKey);
    assert.deepEqual(await webhook.verify(body, headers(`${bad} ${good}`)), JSON.parse(body));
    await refused(webhook.verify(body, headers(bad)), /No matching signature/);
    await refused(webhook.verify(`${body} `, headers(good)), /No matching signature/);
    await refused(webhook.verify(body, headers(good.replace('v1a,', 'v1,'))), /No matching signature/);
    await refused(new Webhook(theirs.publicKey).verify(body, headers(good)), /No matching signature/);
  });
});
