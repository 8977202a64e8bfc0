import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Migrator } from 'kysely';
import { MIGRATIONS } from '../../../src/store/db.js';
import { createTestDatabase, startTestService } from '../../support/service.js';
import { bootstrap, Client } from '../../support/client.js';
import { withDatabase } from '../../support/store.js';

// Migration 022 gives endpoints a type (http for every endpoint made before it) and a destination's
// settings. Rolled back, a destination could only be sent to as HTTP: it is disabled instead, and every
// HTTP endpoint reads and works as before.

test('endpoints made before destinations read as http; a rollback disables destinations and keeps the rest', async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  const service = await startTestService({}, database);
  const { test: api } = await bootstrap(service.url);
  const app = await api.post('/api/v1/applications', { name: 'Acme' });
  const http = await api.post('/api/v1/endpoints', { app_id: app.body.id, url: 'https://example.com/hook' });
  const broker = await api.post('/api/v1/endpoints', {
    app_id: app.body.id,
    type: 'redis',
    url: 'redis://:pw@127.0.0.1:6379/0',
  });
  assert.equal(broker.status, 201);
  await service.close();

  await withDatabase(database.env, async (db) => {
    const back = await new Migrator({ db, provider: { getMigrations: async () => MIGRATIONS } }).migrateTo(
      '021_first_attempt_on_delivery',
    );
    assert.equal(back.error, undefined, String(back.error));
    const rows = await db.selectFrom('endpoints').selectAll().orderBy('id').execute();
    assert.ok(
      rows.every((row) => !('type' in row) && !('destination_sealed' in row)),
      'the columns are gone',
    );
    const byId = new Map(rows.map((row) => [row.id, row.status]));
    assert.equal(byId.get(http.body.id), 'active');
    assert.equal(byId.get(broker.body.id), 'disabled');
  });

  // Migrated forward again, an endpoint written by the earlier schema reads as an HTTP receiver.
  const again = await startTestService({}, database);
  t.after(() => again.close());
  const client = new Client(again.url, api.key);
  const read = await client.get(`/api/v1/endpoints/${http.body.id}`);
  assert.equal(read.body.type, 'http');
  assert.equal(read.body.config, null);
  assert.equal(read.body.status, 'active');
});
