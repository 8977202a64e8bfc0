import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Migrator, sql } from 'kysely';
import { MIGRATIONS, migrate } from '../../../src/store/db.js';
import { idFloor, newId } from '../../../src/domain/ids.js';
import { createTestDatabase, startTestService, TEST_STORE } from '../../support/service.js';
import { bootstrap, Client } from '../../support/client.js';
import { withDatabase } from '../../support/store.js';
import { BASE_ENV } from '../../support/child.js';
import { loadConfig } from '../../../src/config.js';
import { Store } from '../../../src/store/index.js';
import { eventually, Receiver } from '../../support/receiver.js';

// Migration 029 moves the event ids to a table of their own on both stores, and on PostgreSQL `herald
// partition` then makes the history tables partitioned without copying them (the tables as they are become
// the first partitions). A store written by the schema before is migrated, and partitioned, while rows keep
// being written as a release before would write them: nothing written before or during either is lost,
// every read is the same after, and an event id stays taken.

const BEFORE = '028_audit_log';

test('a store of the schema before is migrated and partitioned under writes: every row and read stays, event ids stay taken', async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  const receiver = await new Receiver().start();
  t.after(() => receiver.stop());
  const service = await startTestService({}, database);
  const { test: api } = await bootstrap(service.url);
  const app = (await api.post('/api/v1/applications', { name: 'Acme' })).body;
  await api.post('/api/v1/endpoints', { app_id: app.id, url: `${receiver.url}/hook` });
  const first = await api.post(`/api/v1/app/${app.id}/msg`, {
    eventType: 'invoice.paid',
    eventId: 'inv-1',
    payload: { n: 0 },
  });
  assert.equal(first.status, 202, JSON.stringify(first.body));
  const ids = [first.body.id as string];
  for (let n = 1; n < 12; n++)
    ids.push(
      (await api.post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid', payload: { n } })).body.id,
    );
  const settled = async (client: Client) => {
    const page = (await client.get(`/api/v1/deliveries?app_id=${app.id}&limit=100`)).body;
    return page.data.length === ids.length && page.data.every((d: { status: string }) => d.status === 'success');
  };
  await eventually(() => settled(api), 15_000, 'every message delivered');
  const read = async (client: Client) =>
    Promise.all(
      ids.map(async (id) => {
        const [message, deliveries, payload] = await Promise.all([
          client.get(`/api/v1/messages/${id}`),
          client.get(`/api/v1/messages/${id}/deliveries`),
          client.get(`/api/v1/messages/${id}/payload`),
        ]);
        const full = await Promise.all(
          deliveries.body.data.map(async (d: { id: string }) => (await client.get(`/api/v1/deliveries/${d.id}`)).body),
        );
        return { message: message.body, payload: payload.body, deliveries: full };
      }),
    );
  const before = await read(api);
  await service.close();

  // Back to the schema before, as a store of the release before is.
  await withDatabase(database.env, async (db) => {
    const back = await new Migrator({ db, provider: { getMigrations: async () => MIGRATIONS } }).migrateTo(BEFORE);
    assert.equal(back.error, undefined, String(back.error));
  });

  // Rows written as the release before writes them, one transaction each, while the migration runs.
  const written: string[] = [];
  let writing = true;
  const writes = withDatabase(database.env, async (db) => {
    const [{ org_id: orgId }] = (
      await sql<{ org_id: string }>`select org_id from applications where id = ${app.id}`.execute(db)
    ).rows as [{ org_id: string }];
    while (writing) {
      const id = newId('message');
      const now = Date.now();
      try {
        await db.transaction().execute(async (trx) => {
          await trx
            .insertInto('messages')
            .values({ id, org_id: orgId, livemode: 0, app_id: app.id, event_type: 'invoice.paid', created_at: now })
            .execute();
          await trx
            .insertInto('payloads')
            .values({ message_id: id, body: '{"during":true}', created_at: now })
            .execute();
        });
        written.push(id);
      } catch {
        // A write refused while a table changes is not acknowledged, so nothing of it is owed.
      }
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  });
  await eventually(async () => written.length >= 20, 10_000, 'writes under way');
  await withDatabase(database.env, async (db) => {
    const names = await migrate(db);
    assert.deepEqual(names, ['029_message_event_ids']);
  });
  if (TEST_STORE === 'postgres') {
    const store = await Store.open(loadConfig({ ...BASE_ENV, ...database.env }));
    try {
      assert.equal(await store.partitionTables(), true);
    } finally {
      await store.close();
    }
  }
  await eventually(async () => written.length >= 40, 10_000, 'writes after the migration');
  writing = false;
  await writes;

  const again = await startTestService({}, database);
  t.after(() => again.close());
  const client = new Client(again.url, api.key);
  assert.deepEqual(await read(client), before, 'every read the same');
  for (const id of written) {
    const payload = await client.get(`/api/v1/messages/${id}/payload`);
    assert.equal(payload.status, 200, `${id} written during the migration is kept`);
  }
  // The event id is still taken; a new one is not.
  const repeat = await client.post(`/api/v1/app/${app.id}/msg`, {
    eventType: 'invoice.paid',
    eventId: 'inv-1',
    payload: {},
  });
  assert.equal(repeat.status, 409, JSON.stringify(repeat.body));
  const fresh = await client.post(`/api/v1/app/${app.id}/msg`, {
    eventType: 'invoice.paid',
    eventId: 'inv-2',
    payload: {},
  });
  assert.equal(fresh.status, 202);
  const again2 = await client.post(`/api/v1/app/${app.id}/msg`, {
    eventType: 'invoice.paid',
    eventId: 'inv-2',
    payload: {},
  });
  assert.equal(again2.status, 409);

  await withDatabase(database.env, async (db) => {
    if (TEST_STORE !== 'postgres') return;
    // The old tables were not copied: they are the first partitions, holding every row written before.
    const { rows } = await sql<{ relname: string; relkind: string }>`select relname, relkind from pg_class
      where relname in ('deliveries', 'deliveries_legacy', 'messages_legacy', 'attempts_legacy', 'payloads_legacy')
      order by relname`.execute(db);
    assert.deepEqual(
      rows.map((r) => `${r.relname}:${r.relkind}`),
      ['attempts_legacy:r', 'deliveries:p', 'deliveries_legacy:r', 'messages_legacy:r', 'payloads_legacy:r'],
    );
    const legacy = await sql<{
      n: number;
    }>`select count(*)::int as n from messages_legacy where id < ${idFloor('message', Date.now() + 3_600_000)}`.execute(
      db,
    );
    assert.ok(legacy.rows[0]!.n >= ids.length + written.length - 1, 'the rows are where they were');
  });
});
