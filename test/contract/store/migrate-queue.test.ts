import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Migrator, sql } from 'kysely';
import { MIGRATIONS } from '../../../src/store/db.js';
import { createTestDatabase, startTestService } from '../../support/service.js';
import { bootstrap, Client } from '../../support/client.js';
import { eventually, Receiver } from '../../support/receiver.js';
import { withDatabase } from '../../support/store.js';

// Migration 020 moves each delivery's queued attempts from rows of their own (delivery_tasks) onto the
// delivery row. A store written in the earlier shape (tasks waiting, due later, held by a worker, a
// manual attempt beside a scheduled one, none) migrates, and then reads and delivers exactly as the
// earlier rules said: the same next attempt times, the same attempts made with the same numbers.

const HOUR = 3_600_000;

test('a store whose deliveries have tasks migrates onto the delivery rows: same reads, same attempts', {
  timeout: 120_000,
}, async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  const receiver = await new Receiver().start();
  t.after(() => receiver.stop());
  const env = { HERALD_RETRY_SCHEDULE: '1h,0s' };

  // Five deliveries made by the service, nothing due for an hour.
  const first = await startTestService(env, database);
  const { test: api } = await bootstrap(first.url);
  const app = await api.post('/api/v1/applications', { name: 'Acme' });
  const endpoint = await api.post('/api/v1/endpoints', { app_id: app.body.id, url: `${receiver.url}/hook` });
  assert.equal(endpoint.status, 201);
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    const sent = await api.post('/api/v1/messages', {
      app_id: app.body.id,
      event_type: 'invoice.paid',
      payload: { i },
    });
    ids.push(sent.body.delivery_ids[0]);
  }
  await first.close();

  // Back to the earlier schema, and the tasks written as the earlier release wrote them.
  const now = Date.now();
  const [due, later, manualFirst, held, none] = ids as [string, string, string, string, string];
  await withDatabase(database.env, async (db) => {
    const back = await new Migrator({ db, provider: { getMigrations: async () => MIGRATIONS } }).migrateTo(
      '019_attempt_headers',
    );
    assert.equal(back.error, undefined, String(back.error));
    const columns = await sql<{ n: number }>`select count(*) as n from delivery_tasks`.execute(db);
    assert.equal(Number(columns.rows[0]!.n), 5, 'the rollback wrote one task per queued delivery');
    await db.deleteFrom('delivery_tasks').execute();
    const task = (delivery: string, n: number, trigger: string, runAt: number, owner: string | null) => ({
      id: `tsk_${delivery}_${n}`,
      delivery_id: delivery,
      endpoint_id: endpoint.body.id,
      trigger,
      attempt_number: n,
      run_at: runAt,
      lease_owner: owner,
    });
    await db
      .insertInto('delivery_tasks')
      .values([
        task(due, 1, 'scheduled', now - 1_000, null),
        task(later, 1, 'scheduled', now + HOUR, null),
        // A manual retry ahead of the waiting scheduled attempt, numbered before it.
        task(manualFirst, 1, 'manual', now - 500, null),
        task(manualFirst, 2, 'scheduled', now + HOUR, null),
        // Held by a worker that is gone: its lease ends in two seconds.
        task(held, 1, 'scheduled', now + 2_000, 'wrk_gone'),
      ])
      .execute();
    await db.updateTable('deliveries').set({ attempt_seq: 2 }).where('id', '=', manualFirst).execute();
    await db.updateTable('deliveries').set({ status: 'failed', attempt_seq: 0 }).where('id', '=', none).execute();
  });

  // The service migrates on start: reads first, with no worker running yet.
  const api2 = await startTestService({ ...env, HERALD_ROLE: 'api' }, database);
  const client = new Client(api2.url, api.key);
  const read = async (id: string) => (await client.get(`/api/v1/deliveries/${id}`)).body;
  const at = (ms: number) => new Date(ms).toISOString();
  assert.equal((await read(due)).next_attempt_at, at(now - 1_000));
  assert.equal((await read(later)).next_attempt_at, at(now + HOUR));
  assert.equal((await read(manualFirst)).next_attempt_at, at(now - 500), 'the manual attempt is next');
  assert.equal((await read(held)).next_attempt_at, null, 'an attempt under way has no next time');
  assert.equal((await read(none)).next_attempt_at, null);
  assert.equal((await read(none)).status, 'failed');
  await api2.close();

  // Then a worker: what was due goes, the held attempt goes once its lease has run out, the rest waits.
  const worker = await startTestService(env, database);
  t.after(() => worker.stop());
  const api3 = new Client(worker.url, api.key);
  const attempts = async (id: string) =>
    ((await api3.get(`/api/v1/deliveries/${id}`)).body.attempts as { attempt_number: number; trigger: string }[])
      .map((a) => `${a.attempt_number}:${a.trigger}`)
      .sort();
  await eventually(async () => (receiver.received.length >= 3 ? true : undefined), 20_000, 'three deliveries');
  await eventually(async () => ((await attempts(held)).length === 1 ? true : undefined), 20_000, 'the held one');
  assert.deepEqual(await attempts(due), ['1:scheduled']);
  assert.deepEqual(
    await attempts(manualFirst),
    ['1:manual'],
    'delivered by the manual attempt: the scheduled one goes',
  );
  assert.deepEqual(await attempts(held), ['1:scheduled']);
  assert.deepEqual(await attempts(later), [], 'due in an hour');
  assert.equal((await api3.get(`/api/v1/deliveries/${later}`)).body.next_attempt_at, at(now + HOUR));
  assert.equal(receiver.received.length, 3);
});

// Migration 021 records a first attempt that delivered on its delivery row. A rollback writes each such
// attempt back as a row of `attempts`, and migrating again reads them there: every delivery reads the same
// attempts through the API before, between and after.
test('first attempts on delivery rows roll back to attempt rows and read the same either way', {
  timeout: 120_000,
}, async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  const receiver = await new Receiver().start();
  t.after(() => receiver.stop());
  let calls = 0;
  // The first delivery's first attempt fails (a row of its own), its retry and the others deliver.
  receiver.respond = () => (calls++ === 0 ? { status: 500 } : { status: 204 });
  const env = { HERALD_RETRY_SCHEDULE: '0s,0s' };
  const service = await startTestService(env, database);
  const { test: api } = await bootstrap(service.url);
  const app = await api.post('/api/v1/applications', { name: 'Acme' });
  await api.post('/api/v1/endpoints', { app_id: app.body.id, url: `${receiver.url}/hook` });
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const sent = await api.post('/api/v1/messages', {
      app_id: app.body.id,
      event_type: 'invoice.paid',
      payload: { i },
    });
    ids.push(sent.body.delivery_ids[0]);
  }
  const read = async (client: { get(path: string): Promise<{ body: any }> }) =>
    Promise.all(
      ids.map(async (id) =>
        ((await client.get(`/api/v1/deliveries/${id}`)).body.attempts as Record<string, unknown>[]).map((a) => [
          a.id,
          a.attempt_number,
          a.status,
          a.response_status,
          a.duration_ms,
        ]),
      ),
    );
  await eventually(
    async () => ((await read(api)).every((attempts) => attempts.some((a) => a[2] === 'success')) ? true : undefined),
    20_000,
    'all delivered',
  );
  const before = await read(api);
  assert.deepEqual(
    before.map((attempts) => attempts.length),
    [2, 1, 1],
  );
  await service.close();

  await withDatabase(database.env, async (db) => {
    const onRows = await db.selectFrom('deliveries').select('id').where('first_attempt_id', 'is not', null).execute();
    assert.equal(onRows.length, 2, 'the two first attempts that delivered are on their delivery rows');
    const back = await new Migrator({ db, provider: { getMigrations: async () => MIGRATIONS } }).migrateTo(
      '020_queue_on_deliveries',
    );
    assert.equal(back.error, undefined, String(back.error));
    const rows = await db.selectFrom('attempts').select(['id', 'attempt_number', 'status']).execute();
    assert.equal(rows.length, 4, 'every attempt is a row');
  });
  const again = await startTestService(env, database);
  const client = new Client(again.url, api.key);
  assert.deepEqual(await read(client), before);
  await again.close();
});
