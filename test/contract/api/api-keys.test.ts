import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, Client } from '../../support/client.js';
import { assertError, createApp, listAll } from '../../support/api.js';

// API keys: create (api-v1.md), list and revoke (additive), and the dev bootstrap route (decisions.md).
describe('api keys', () => {
  let service: TestService;

  before(async () => {
    service = await startTestService({ HERALD_ROLE: 'api' });
  });
  after(async () => service?.stop());

  test('dev bootstrap: 201 with a new organization and a Test and a Live key, each shown once', async () => {
    const reply = await new Client(service.url).post('/api/v1/dev/bootstrap', { name: 'Boot' });
    assert.equal(reply.status, 201);
    assert.equal(reply.body.object, 'bootstrap');
    assert.match(reply.body.organization.id, /^org_/);
    assert.equal(reply.body.organization.name, 'Boot');
    for (const [field, prefix, livemode] of [
      ['test_key', 'sk_test_', false],
      ['live_key', 'sk_live_', true],
    ] as const) {
      const key = reply.body[field];
      assert.match(key.id, /^key_/);
      assert.equal(key.object, 'api_key');
      assert.equal(key.prefix, prefix);
      assert.equal(key.livemode, livemode);
      assert.equal(typeof key.name, 'string');
      assert.ok(key.key.startsWith(prefix));
      // At least 192 bits of randomness: 33+ base62 characters.
      assert.ok(key.key.length - prefix.length >= 33, key.key);
    }
    const again = await new Client(service.url).post('/api/v1/dev/bootstrap');
    assert.equal(again.status, 201);
    assert.notEqual(again.body.organization.id, reply.body.organization.id);
    assertError(
      await new Client(service.url).post('/api/v1/dev/bootstrap', { name: 5 }),
      400,
      'invalid_request',
      /name/,
    );
  });

  test('in production the dev bootstrap route does not exist: 404 with the envelope', async () => {
    const production = await startTestService({
      HERALD_ROLE: 'api',
      HERALD_MODE: 'production',
      HERALD_SECRET_KEY: 'production-secret-key-0123456789-abcdefghij',
    });
    try {
      const anonymous = new Client(production.url);
      assertError(await anonymous.post('/api/v1/dev/bootstrap', { name: 'Nope' }), 404, 'not_found');
      assertError(await anonymous.post('/api/v1/dev/bootstrap'), 404, 'not_found');
      assert.deepEqual(await production.store.organizations.list(), [], 'no organization was created');
      assert.equal((await anonymous.get('/healthz')).status, 200);
    } finally {
      await production.stop();
    }
  });

  test('create: 201 with the plaintext key once; the new key acts on the same organization and environment', async () => {
    const { test: api, live } = await bootstrap(service.url);
    const app = await createApp(api, { name: 'Shared' });
    const reply = await api.post('/api/v1/api-keys', { name: 'ci' });
    assert.equal(reply.status, 201);
    assert.match(reply.body.id, /^key_/);
    assert.equal(reply.body.object, 'api_key');
    assert.equal(reply.body.name, 'ci');
    assert.equal(reply.body.prefix, 'sk_test_');
    assert.equal(reply.body.livemode, false);
    assert.ok(reply.body.key.startsWith('sk_test_'));
    const second = api.withKey(reply.body.key);
    assert.equal((await second.get(`/api/v1/applications/${app.id}`)).status, 200);

    const liveKey = await live.post('/api/v1/api-keys', {});
    assert.equal(liveKey.status, 201);
    assert.equal(liveKey.body.prefix, 'sk_live_');
    assert.equal(liveKey.body.livemode, true);
    assert.ok(liveKey.body.key.startsWith('sk_live_'));
    assertError(await api.withKey(liveKey.body.key).get(`/api/v1/applications/${app.id}`), 404, 'not_found');

    const noBody = await api.post('/api/v1/api-keys');
    assert.equal(noBody.status, 201);
    assertError(await api.post('/api/v1/api-keys', { name: 5 }), 400, 'invalid_request', /name/);
  });

  test('list shows keys of this environment without their secret; revoke makes a key 401 at once', async () => {
    const { test: api, raw } = await bootstrap(service.url);
    const created = await api.post('/api/v1/api-keys', { name: 'temporary' });
    const listed = await listAll(api, '/api/v1/api-keys', 1);
    assert.deepEqual(listed.map((k) => k.id).sort(), [raw.test_key.id, created.body.id].sort());
    for (const key of listed) {
      assert.equal(key.key, undefined);
      assert.equal(key.revoked_at, null);
      assert.equal(key.livemode, false);
    }
    assert.ok(!JSON.stringify(listed).includes(created.body.key));

    const temporary = api.withKey(created.body.key);
    assert.equal((await temporary.get('/api/v1/applications')).status, 200);
    const revoked = await api.delete(`/api/v1/api-keys/${created.body.id}`);
    assert.equal(revoked.status, 200);
    assert.equal(revoked.body.id, created.body.id);
    assert.ok(!Number.isNaN(Date.parse(revoked.body.revoked_at)));
    assertError(await temporary.get('/api/v1/applications'), 401, 'unauthorized');
    assertError(await temporary.post('/api/v1/applications', { name: 'x' }), 401, 'unauthorized');
    assert.equal((await api.get('/api/v1/applications')).status, 200, 'other keys keep working');
    const after = (await api.get('/api/v1/api-keys')).body.data.find((k: any) => k.id === created.body.id);
    assert.ok(after.revoked_at);
    assertError(await api.delete('/api/v1/api-keys/key_doesnotexist'), 404, 'not_found');
  });

  test('a key can revoke itself and is refused right after', async () => {
    const { test: api, raw } = await bootstrap(service.url);
    assert.equal((await api.delete(`/api/v1/api-keys/${raw.test_key.id}`)).status, 200);
    assertError(await api.get('/api/v1/api-keys'), 401, 'unauthorized');
  });

  test('a key lookup that read the key before its revocation and answers after it is not remembered as valid', async () => {
    const { raw } = await bootstrap(service.url);
    const organizations = service.store.organizations;
    const key = raw.test_key.key as string;
    // The lookup reads the row at once but answers only when let go, as a PostgreSQL read that ran before
    // the revocation committed can.
    const lookup = organizations.readKeyOwner;
    let letGo!: () => void;
    const held = new Promise<void>((resolve) => (letGo = resolve));
    organizations.readKeyOwner = async (...args: Parameters<typeof lookup>) => {
      const owner = await lookup(...args);
      await held;
      return owner;
    };
    let early: Promise<unknown>;
    try {
      early = organizations.findKeyOwner(key);
      await new Promise((resolve) => setTimeout(resolve, 20));
      await organizations.revokeKey({ orgId: raw.organization.id, livemode: false }, raw.test_key.id);
      letGo();
      assert.ok(await early, 'the early lookup answers with what it read');
    } finally {
      organizations.readKeyOwner = lookup;
    }
    assert.equal(await organizations.findKeyOwner(key), undefined, 'the next lookup finds the key revoked');
  });

  test('a flood of unknown keys does not push the real keys out of the key cache', async () => {
    const { raw } = await bootstrap(service.url);
    const organizations = service.store.organizations;
    const lookup = organizations.readKeyOwner;
    let lookups = 0;
    organizations.readKeyOwner = async (...args: Parameters<typeof lookup>) => (lookups++, lookup(...args));
    // Unknown keys presented as a flood would (in batches, a thousand at a time at most).
    const flood = async (from: number, to: number) => {
      for (let i = from; i < to; i += 50) {
        const answers = await Promise.all(
          Array.from({ length: 50 }, (_, j) =>
            organizations.findKeyOwner(`sk_test_flood${String(i + j).padStart(28, '0')}`),
          ),
        );
        assert.ok(answers.every((owner) => owner === undefined));
      }
    };
    try {
      await flood(0, 9_950);
      // The real key is remembered just before the flood goes past what a cache holds (entries last 2 s).
      assert.ok(await organizations.findKeyOwner(raw.test_key.key));
      await flood(9_950, 10_100);
      lookups = 0;
      assert.ok(await organizations.findKeyOwner(raw.test_key.key));
      assert.equal(lookups, 0, 'the real key is still answered from the cache');
    } finally {
      organizations.readKeyOwner = lookup;
    }
  });
});
