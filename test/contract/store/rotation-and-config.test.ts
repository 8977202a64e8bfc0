import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService } from '../../support/service.js';
import { bootstrap } from '../../support/client.js';
import { ConfigError, loadConfig } from '../../../src/config.js';
import { MAX_PREVIOUS_SECRETS } from '../../../src/store/endpoints.js';
import { openStore } from '../../support/store.js';

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
  const rotations = await Promise.all(
    Array.from({ length: MAX_PREVIOUS_SECRETS }, () => endpoints.rotateSecret(scope, endpoint.id, 60_000)),
  );
  const issued = rotations.map((r) => r!.secret);
  const now = Date.now();
  const secrets = await secretsAt(now);
  assert.ok(issued.includes(secrets.current), 'the current secret is one that was issued');
  assert.deepEqual(
    [...secrets.previous].sort(),
    [endpoint.signing_secret, ...issued.filter((s) => s !== secrets.current)].sort(),
    'every other issued secret still signs',
  );
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
  assert.deepEqual(
    (await secretsOfOther(Date.now())).previous,
    [first.secret, other.signing_secret],
    'both rotated-out secrets sign during the first grace',
  );
  assert.deepEqual(
    (await secretsOfOther(first.previousValidUntil)).previous,
    [first.secret],
    "after the first grace, only the second rotation's outgoing secret",
  );
  assert.deepEqual((await secretsOfOther(second.previousValidUntil)).previous, [], 'none after both');

  const viaApi = await api.post(`/api/v1/endpoints/${endpoint.id}/rotate-secret`);
  assert.equal(viaApi.status, 200);
  assert.equal((await api.post('/api/v1/endpoints/ep_missing/rotate-secret')).status, 404);
});

test('the previous secret keeps the columns the version before reads; its rows rotate on with the earlier ones kept', async (t) => {
  const { store, scope, endpointId, secret } = await openStore(t);
  const box = store.endpoints.secrets;
  const row = async () => (await store.endpoints.get(scope, endpointId))!;
  const signing = async (at: number) => store.endpoints.signingSecrets(await row(), at);
  // A row as the version before left it after a rotation: only the previous secret.
  const older = `whsec_${Buffer.alloc(24, 9).toString('base64')}`;
  const olderEnds = Date.now() + 60_000;
  await store.ctx.db
    .updateTable('endpoints')
    .set({ previous_secret_sealed: box.seal(older), previous_valid_until: olderEnds })
    .where('id', '=', endpointId)
    .execute();
  assert.deepEqual((await signing(Date.now())).previous, [older]);

  const first = (await store.endpoints.rotateSecret(scope, endpointId, 120_000))!;
  const second = (await store.endpoints.rotateSecret(scope, endpointId, 120_000))!;
  assert.deepEqual(await signing(Date.now()), { current: second.secret, previous: [first.secret, secret, older] });
  // What a process of the version before reads: the newest outgoing secret alone, and its end.
  const after = await row();
  assert.equal(box.open(after.previous_secret_sealed!), first.secret);
  assert.equal(after.previous_valid_until, second.previousValidUntil);
  assert.deepEqual((await signing(olderEnds)).previous, [first.secret, secret], 'each stops at its own end');
});

test('retention shorter than the idempotency window is refused at start-up', () => {
  assert.throws(
    () =>
      loadConfig({
        HERALD_SECRET_KEY: 'k'.repeat(40),
        HERALD_RETENTION: '1h',
        HERALD_IDEMPOTENCY_TTL: '24h',
        HERALD_DATA_DIR: '/tmp/herald-config-test',
      }),
    (error: unknown) =>
      error instanceof ConfigError && /HERALD_RETENTION must be at least HERALD_IDEMPOTENCY_TTL/.test(error.message),
  );
  assert.equal(
    loadConfig({
      HERALD_SECRET_KEY: 'k'.repeat(40),
      HERALD_RETENTION: '2d',
      HERALD_IDEMPOTENCY_TTL: '1d',
      HERALD_DATA_DIR: '/tmp/herald-config-test',
    }).retentionMs,
    2 * 86_400_000,
  );
});

test('HERALD_SSRF_ALLOW takes host names, addresses and CIDR ranges as URLs name them, and refuses what none could match', () => {
  const base = { HERALD_SECRET_KEY: 'k'.repeat(40), HERALD_DATA_DIR: '/tmp/herald-config-test' };
  assert.deepEqual(
    loadConfig({ ...base, HERALD_SSRF_ALLOW: ' Hooks.Internal. , 10.0.0.0/8,FD00::1,192.168.1.20' }).ssrfAllow,
    ['hooks.internal', '10.0.0.0/8', 'fd00::1', '192.168.1.20'],
  );
  for (const entry of ['10.0.0.0/99', '192.168.1.300', '10.0.0.1.5', 'bad host', 'under_score.example']) {
    assert.throws(
      () => loadConfig({ ...base, HERALD_SSRF_ALLOW: `10.0.0.0/8,${entry}` }),
      (error: unknown) =>
        error instanceof ConfigError && error.message.includes(`HERALD_SSRF_ALLOW entry ${entry.toLowerCase()} is not`),
      entry,
    );
  }
});
