import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService } from '../support/service.js';
import { bootstrap } from '../support/client.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { MAX_PREVIOUS_SECRETS } from '../../src/store/endpoints.js';
import { openStore } from './helpers.js';

test('concurrent rotations each keep their outgoing secret signing; each rotated-out secret stops at the end of its own grace', async (t) => {
  const service = await startTestService({ HERALD_ROLE: 'api' });
  t.after(() => service.stop());
  const { test: api } = await bootstrap(service.url);
  const app = (await api.post('/api/v1/applications', { name: 'rot' })).body;
  const endpoint = (await api.post('/api/v1/endpoints', { app_id: app.id, url: 'https://example.com/hook' })).body;
  const owner = await service.store.applications.getByPortalToken(app.portal_path.split('/').pop()!);
  const scope = { orgId: owner!.org_id, livemode: false };
  const endpoints = service.store.endpoints;
  const secretsAt = async (at: number) => endpoints.signingSecrets((await endpoints.get(scope, endpoint.id))!, at);

  // Ten at once: one of them is current, and every other secret ever issued (the original too) still signs.
  const rotations = await Promise.all(Array.from({ length: MAX_PREVIOUS_SECRETS }, () => endpoints.rotateSecret(scope, endpoint.id, 60_000)));
  const issued = rotations.map((r) => r!.secret);
  const now = Date.now();
  const secrets = await secretsAt(now);
  assert.ok(issued.includes(secrets.current), 'the current secret is one that was issued');
  assert.deepEqual([...secrets.previous].sort(), [endpoint.signing_secret, ...issued.filter((s) => s !== secrets.current)].sort(), 'every other issued secret still signs');
  // One more rotation: the list is full, so the oldest (the original) stops early.
  const next = (await endpoints.rotateSecret(scope, endpoint.id, 60_000))!;
  const after = await secretsAt(Date.now());
  assert.equal(after.current, next.secret);
  assert.equal(after.previous.length, MAX_PREVIOUS_SECRETS);
  assert.equal(after.previous[0], secrets.current, 'newest first');
  assert.ok(!after.previous.includes(endpoint.signing_secret), 'the oldest dropped when the list is full');

  // A short grace then a long one: the secret rotated out first stops at the end of its grace, the
  // second keeps signing until the end of its own.
  const other = (await api.post('/api/v1/endpoints', { app_id: app.id, url: 'https://example.com/other' })).body;
  const first = (await endpoints.rotateSecret(scope, other.id, 1_000))!;
  const second = (await endpoints.rotateSecret(scope, other.id, 60_000))!;
  const secretsOfOther = async (at: number) => endpoints.signingSecrets((await endpoints.get(scope, other.id))!, at);
  assert.deepEqual((await secretsOfOther(Date.now())).previous, [first.secret, other.signing_secret], 'both rotated-out secrets sign during the first grace');
  assert.deepEqual((await secretsOfOther(first.previousValidUntil)).previous, [first.secret], 'after the first grace, only the second rotation\'s outgoing secret');
  assert.deepEqual((await secretsOfOther(second.previousValidUntil)).previous, [], 'none after both');

  const viaApi = await api.post(`/api/v1/endpoints/${endpoint.id}/rotate-secret`);
  assert.equal(viaApi.status, 200);
  assert.equal((await api.post('/api/v1/endpoints/ep_missing/rotate-secret')).status, 404);
});

test('an endpoint rotated before rotated-out secrets were kept as a list still signs with its previous secret', async (t) => {
  const { store, scope, endpointId, secret } = await openStore(t);
  const box = store.endpoints['secrets'];
  const legacyPrevious = 'whsec_' + Buffer.alloc(24, 9).toString('base64');
  const validUntil = Date.now() + 60_000;
  // As such a rotation wrote it: the one previous secret sealed alone.
  await store.ctx.db.updateTable('endpoints').set({ previous_secret_sealed: box.seal(legacyPrevious), previous_valid_until: validUntil }).where('id', '=', endpointId).execute();
  const signing = async (at: number) => store.endpoints.signingSecrets((await store.endpoints.get(scope, endpointId))!, at);
  assert.deepEqual((await signing(Date.now())).previous, [legacyPrevious]);
  assert.deepEqual((await signing(validUntil)).previous, []);
  const rotated = (await store.endpoints.rotateSecret(scope, endpointId, 30_000))!;
  assert.deepEqual(await signing(Date.now()), { current: rotated.secret, previous: [secret, legacyPrevious] }, 'a rotation keeps it in the list');
});

test('retention shorter than the idempotency window is refused at start-up', () => {
  assert.throws(
    () => loadConfig({ HERALD_SECRET_KEY: 'k'.repeat(40), HERALD_RETENTION: '1h', HERALD_IDEMPOTENCY_TTL: '24h', HERALD_DATA_DIR: '/tmp/herald-config-test' }),
    (error: unknown) => error instanceof ConfigError && /HERALD_RETENTION must be at least HERALD_IDEMPOTENCY_TTL/.test(error.message),
  );
  assert.equal(loadConfig({ HERALD_SECRET_KEY: 'k'.repeat(40), HERALD_RETENTION: '2d', HERALD_IDEMPOTENCY_TTL: '1d', HERALD_DATA_DIR: '/tmp/herald-config-test' }).retentionMs, 2 * 86_400_000);
});
