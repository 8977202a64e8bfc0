import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledQuery, type Kysely, sql } from 'kysely';
import { MIGRATIONS, migrate, openPostgres, openSqlite } from '../../src/store/db.js';
import { createTestDatabase } from '../support/service.js';
import { openStore } from './helpers.js';

// An endpoint's attempts by hour are read through the index on (endpoint_id, created_at), on each
// database, with statistics that make reading the whole table look cheap to neither planner: many attempts
// of other endpoints, few of this one's.

test("an endpoint's attempts by hour are read from the attempts_by_endpoint_time index", async (t) => {
  const { store, endpointId } = await openStore(t);
  const now = Date.now();
  const row = (i: number, endpoint: string) => ({
    id: `attempt_${String(i).padStart(26, '0')}`,
    delivery_id: `dlv_${i}`,
    endpoint_id: endpoint,
    attempt_number: 1,
    trigger: 'scheduled' as const,
    status: i % 4 === 0 ? ('failed' as const) : ('success' as const),
    response_status: i % 4 === 0 ? 500 : 200,
    response_body: null,
    error: null,
    duration_ms: 1,
    created_at: now - (i % 48) * 1_800_000,
  });
  const rows = Array.from({ length: 4000 }, (_, i) => row(i, i < 40 ? endpointId : `ep_other${i % 50}`));
  for (let i = 0; i < rows.length; i += 400)
    await store.ctx.db
      .insertInto('attempts')
      .values(rows.slice(i, i + 400))
      .execute();
  await sql`analyze`.execute(store.ctx.db);

  const since = now - 24 * 3_600_000;
  const counted = await store.endpointStats.attemptsByHour(endpointId, since, now + 1);
  const expected = rows.filter((r) => r.endpoint_id === endpointId && r.created_at >= since);
  assert.equal(
    counted.reduce((n, b) => n + b.success + b.failure, 0),
    expected.length,
  );
  assert.equal(
    counted.reduce((n, b) => n + b.failure, 0),
    expected.filter((r) => r.status === 'failed').length,
  );

  const { sql: text, parameters } = store.endpointStats.attemptsByHourQuery(endpointId, since, now + 1).compile();
  const plan =
    store.dialect === 'postgres'
      ? JSON.stringify(
          (await store.ctx.db.executeQuery(CompiledQuery.raw(`explain (format json) ${text}`, [...parameters]))).rows,
        )
      : JSON.stringify(
          (await store.ctx.db.executeQuery(CompiledQuery.raw(`explain query plan ${text}`, [...parameters]))).rows,
        );
  assert.match(plan, /attempts_by_endpoint_time/, plan);
  assert.doesNotMatch(plan, /Seq Scan|SCAN attempts(?! USING)/, plan);
  // The index holds the status too: SQLite counts from it alone, without the table's rows.
  if (store.dialect === 'sqlite') assert.match(plan, /USING COVERING INDEX attempts_by_endpoint_time/, plan);
});

test("migration 009 gives the attempts made before it their delivery's endpoint", async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  const url = database.env.HERALD_DATABASE_URL;
  const opened = url ? openPostgres(url) : openSqlite(database.env.HERALD_DATA_DIR as string);
  t.after(() => opened.close());
  const db = opened.db as unknown as Kysely<any>;
  await migrate(db, Object.fromEntries(Object.entries(MIGRATIONS).filter(([name]) => name < '009')));
  const now = Date.now();
  await db
    .insertInto('deliveries')
    .values(
      ['dlv_a', 'dlv_b'].map((id, i) => ({
        id,
        org_id: 'org_1',
        livemode: 0,
        app_id: 'app_1',
        message_id: `evt_${i}`,
        endpoint_id: `ep_${i}`,
        status: 'failed',
        attempt_count: 1,
        attempt_seq: 1,
        schedule_step: 1,
        created_at: now,
        updated_at: now,
      })),
    )
    .execute();
  await db
    .insertInto('attempts')
    .values(
      ['dlv_a', 'dlv_b', 'dlv_gone'].map((delivery_id, i) => ({
        id: `attempt_${i}`,
        delivery_id,
        attempt_number: 1,
        trigger: 'scheduled',
        status: 'failed',
        response_status: 500,
        response_body: null,
        error: null,
        duration_ms: 1,
        created_at: now,
      })),
    )
    .execute();
  assert.deepEqual(await migrate(db, Object.fromEntries(Object.entries(MIGRATIONS).filter(([name]) => name < '010'))), [
    '009_attempts_by_endpoint',
  ]);
  const rows = await db.selectFrom('attempts').select(['id', 'endpoint_id']).orderBy('id').execute();
  assert.deepEqual(rows, [
    { id: 'attempt_0', endpoint_id: 'ep_0' },
    { id: 'attempt_1', endpoint_id: 'ep_1' },
    { id: 'attempt_2', endpoint_id: null },
  ]);
});
