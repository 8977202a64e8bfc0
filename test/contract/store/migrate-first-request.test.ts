import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Migrator } from 'kysely';
import { MIGRATIONS } from '../../../src/store/db.js';
import { createTestDatabase, startTestService } from '../../support/service.js';
import { bootstrap, Client } from '../../support/client.js';
import { withDatabase } from '../../support/store.js';
import { eventually, Receiver } from '../../support/receiver.js';

// Migration 024 keeps a transformed first attempt that succeeded on its delivery row (first_request) like
// any first attempt: no row of `attempts` is written for it, and reads show the request it made. Rolled
// back, the attempt becomes a row of `attempts` with its request, and reads show the same.

const SHAPE = 'function handler(w) { w.url = w.url + "/shaped"; w.payload = { n: w.payload.data.n }; return w; }';

test('a transformed first attempt is kept on its delivery row; a rollback makes it an attempt row, read the same', async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  const receiver = await new Receiver().start();
  t.after(() => receiver.stop());
  const service = await startTestService({ HERALD_TRANSFORMATION_TIMEOUT: '1s' }, database);
  const { test: api } = await bootstrap(service.url);
  const app = await api.post('/api/v1/applications', { name: 'Acme' });
  const endpoint = await api.post('/api/v1/endpoints', {
    app_id: app.body.id,
    url: `${receiver.url}/hook`,
    transformation: { code: SHAPE },
  });
  assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
  const message = await api.post('/api/v1/messages', {
    app_id: app.body.id,
    event_type: 'invoice.paid',
    payload: { n: 5 },
  });
  const [deliveryId] = message.body.delivery_ids as string[];
  const read = async (client: Client) => (await client.get(`/api/v1/deliveries/${deliveryId}`)).body;
  const delivered = await eventually(
    async () => {
      const delivery = await read(api);
      return delivery.status === 'success' ? delivery : null;
    },
    10_000,
    'delivered',
  );
  const expected = { method: 'POST', url: `${receiver.url}/hook/shaped`, body: '{"n":5}' };
  assert.deepEqual(
    delivered.attempts.map((a: { request: unknown }) => a.request),
    [expected],
  );
  await service.close();

  await withDatabase(database.env, async (db) => {
    const row = await db.selectFrom('deliveries').selectAll().where('id', '=', deliveryId!).executeTakeFirstOrThrow();
    assert.deepEqual(JSON.parse(row.first_request), expected, 'the request is on the delivery row');
    assert.equal(
      (await db.selectFrom('attempts').select('id').where('delivery_id', '=', deliveryId!).execute()).length,
      0,
      'no attempt row was written',
    );
    const back = await new Migrator({ db, provider: { getMigrations: async () => MIGRATIONS } }).migrateTo(
      '023_transformations',
    );
    assert.equal(back.error, undefined, String(back.error));
    const attempts = await db.selectFrom('attempts').selectAll().where('delivery_id', '=', deliveryId!).execute();
    assert.equal(attempts.length, 1);
    assert.equal(attempts[0]!.id, row.first_attempt_id);
    assert.deepEqual(JSON.parse(attempts[0]!.request), expected);
    const after = await db.selectFrom('deliveries').selectAll().where('id', '=', deliveryId!).executeTakeFirstOrThrow();
    assert.ok(!('first_request' in after), 'the column is gone');
    assert.equal(after.first_attempt_at, null, 'the attempt is read from its row alone');
  });

  // Migrated forward again, the read is the same.
  const again = await startTestService({}, database);
  t.after(() => again.close());
  const reread = await read(new Client(again.url, api.key));
  assert.deepEqual(reread.attempts, delivered.attempts);
});
