import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService } from '../support/service.js';
import { bootstrap } from '../support/client.js';
import { ConfigError, loadConfig } from '../../src/config.js';

test('concurrent rotations chain: the last one keeps an issued secret as its previous, never the original', async (t) => {
  const service = await startTestService({ HERALD_ROLE: 'api' });
  t.after(() => service.stop());
  const { test: api } = await bootstrap(service.url);
  const app = (await api.post('/api/v1/applications', { name: 'rot' })).body;
  const endpoint = (await api.post('/api/v1/endpoints', { app_id: app.id, url: 'https://example.com/hook' })).body;
  const owner = await service.store.applications.getByPortalToken(app.portal_path.split('/').pop()!);
  const scope = { orgId: owner!.org_id, livemode: false };

  const rotations = await Promise.all(Array.from({ length: 10 }, () => service.store.endpoints.rotateSecret(scope, endpoint.id, 60_000)));
  const issued = rotations.map((r) => r!.secret);
  const secrets = service.store.endpoints.signingSecrets((await service.store.endpoints.get(scope, endpoint.id))!, Date.now());
  assert.ok(issued.includes(secrets.current), 'the current secret is one that was issued');
  assert.ok(secrets.previous !== null && issued.includes(secrets.previous) && secrets.previous !== secrets.current, 'the previous secret is another issued one');
  assert.notEqual(secrets.previous, endpoint.signing_secret, 'the original secret was rotated out long ago');

  const viaApi = await api.post(`/api/v1/endpoints/${endpoint.id}/rotate-secret`);
  assert.equal(viaApi.status, 200);
  assert.equal((await api.post('/api/v1/endpoints/ep_missing/rotate-secret')).status, 404);
});

test('retention shorter than the idempotency window is refused at start-up', () => {
  assert.throws(
    () => loadConfig({ HERALD_SECRET_KEY: 'k'.repeat(40), HERALD_RETENTION: '1h', HERALD_IDEMPOTENCY_TTL: '24h', HERALD_DATA_DIR: '/tmp/herald-config-test' }),
    (error: unknown) => error instanceof ConfigError && /HERALD_RETENTION must be at least HERALD_IDEMPOTENCY_TTL/.test(error.message),
  );
  assert.equal(loadConfig({ HERALD_SECRET_KEY: 'k'.repeat(40), HERALD_RETENTION: '2d', HERALD_IDEMPOTENCY_TTL: '1d', HERALD_DATA_DIR: '/tmp/herald-config-test' }).retentionMs, 2 * 86_400_000);
});
