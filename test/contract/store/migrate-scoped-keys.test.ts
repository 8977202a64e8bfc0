import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Migrator } from 'kysely';
import { MIGRATIONS } from '../../../src/store/db.js';
import { createTestDatabase, startTestService } from '../../support/service.js';
import { bootstrap, Client } from '../../support/client.js';
import { withDatabase } from '../../support/store.js';

// Migration 027 gives API keys a role, applications and an expiry. Keys made before it keep their power
// (admin, every application, no expiry); rolled back, a key that was limited is revoked rather than
// becoming an admin key for every application.

test('keys made before scoped keys read as admin keys and work; a rollback revokes the limited ones', async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  const service = await startTestService({}, database);
  const { test: api } = await bootstrap(service.url);
  const app = (await api.post('/api/v1/applications', { name: 'Acme' })).body;
  const full = (await api.post('/api/v1/api-keys', { name: 'full' })).body;
  const reader = (await api.post('/api/v1/api-keys', { name: 'reader', role: 'reader' })).body;
  const limited = (await api.post('/api/v1/api-keys', { name: 'limited', app_ids: [app.id] })).body;
  await service.close();

  await withDatabase(database.env, async (db) => {
    const back = await new Migrator({ db, provider: { getMigrations: async () => MIGRATIONS } }).migrateTo(
      '026_circuit_breaker',
    );
    assert.equal(back.error, undefined, String(back.error));
    const rows = await db.selectFrom('api_keys').selectAll().execute();
    assert.ok(
      rows.every((row) => !('role' in row) && !('app_ids' in row) && !('expires_at' in row)),
      'the columns are gone',
    );
    const revoked = new Map(rows.map((row) => [row.id, row.revoked_at !== null]));
    assert.equal(revoked.get(full.id), false, 'an admin key for every application stays');
    assert.equal(revoked.get(reader.id), true, 'a reader key is revoked');
    assert.equal(revoked.get(limited.id), true, 'a key limited to an application is revoked');
  });

  // Migrated forward again, the keys the earlier schema kept are admin keys for every application.
  const again = await startTestService({}, database);
  t.after(() => again.close());
  const client = new Client(again.url, full.key);
  const listed = (await client.get('/api/v1/api-keys')).body.data;
  const read = listed.find((key: { id: string }) => key.id === full.id);
  assert.equal(read.role, 'admin');
  assert.equal(read.app_ids, null);
  assert.equal(read.expires_at, null);
  assert.equal((await client.post('/api/v1/applications', { name: 'Still admin' })).status, 201);
  assert.equal((await new Client(again.url, reader.key).get('/api/v1/applications')).status, 401);
});
