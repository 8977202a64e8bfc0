import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledQuery, type Kysely, sql } from 'kysely';
import { MIGRATIONS, migrate, openPostgres, openSqlite } from '../../../src/store/db.js';
import { createTestDatabase } from '../../support/service.js';
import { openStore } from '../../support/store.js';
import { assertIndexReads, writeAttempts } from '../../support/attempt-reads.js';

// An endpoint's attempts by hour are read through the indexes by endpoint and time of both places an attempt
// is recorded (a row of attempts, a delivery's first attempt), on each database, with statistics that make
// reading either table whole look cheap to neither planner: many attempts of other endpoints, few of this
// one's.

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
  await writeAttempts(store.ctx.db, rows);
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
  assertIndexReads(plan);
});

test("an endpoint's attempt durations per hour: p50 and p95 by nearest rank, read through the index", async (t) => {
  const { store, endpointId } = await openStore(t);
  const hour = 3_600_000;
  const start = Math.floor(Date.now() / hour) * hour - 3 * hour;
  // Hour 0: 20 durations 10, 20, …, 200 in shuffled order; hour 1: one attempt; hour 2: two; hour 3: none.
  // Another endpoint's attempts in the same hours, all slower, must not count.
  const durations: [offset: number, ms: number][] = [
    ...Array.from({ length: 20 }, (_, i) => [0, ((i * 7) % 20) * 10 + 10] as [number, number]),
    [1, 333],
    [2, 40],
    [2, 1000],
  ];
  const row = (i: number, endpoint: string, offset: number, ms: number) => ({
    id: `attempt_${String(i).padStart(26, '0')}`,
    delivery_id: `dlv_${i}`,
    endpoint_id: endpoint,
    attempt_number: 1,
    trigger: 'scheduled' as const,
    status: i % 3 === 0 ? ('failed' as const) : ('success' as const),
    response_status: i % 3 === 0 ? 500 : 200,
    response_body: null,
    error: null,
    duration_ms: ms,
    created_at: start + offset * hour + ((i * 60_000) % hour),
  });
  const rows = [
    ...durations.map(([offset, ms], i) => row(i, endpointId, offset, ms)),
    ...Array.from({ length: 2000 }, (_, i) => row(1000 + i, `ep_other${i % 40}`, i % 4, 5000 + i)),
  ];
  await writeAttempts(store.ctx.db, rows);
  await sql`analyze`.execute(store.ctx.db);

  const hours = await store.endpointStats.durationsByHour(endpointId, start, start + 4 * hour);
  // Nearest rank: the ceil(p·n)-th smallest. Hour 0: the 10th and the 19th of 10…200; two attempts: the first.
  assert.deepEqual(hours, [
    { start, p50: 100, p95: 190 },
    { start: start + hour, p50: 333, p95: 333 },
    { start: start + 2 * hour, p50: 40, p95: 1000 },
  ]);
  // The window's bounds hold: from the middle of hour 0, only its later attempts count.
  const later = rows.filter(
    (r) => r.endpoint_id === endpointId && r.created_at >= start + 10 * 60_000 && r.created_at < start + hour,
  );
  const sorted = later.map((r) => r.duration_ms).sort((a, b) => a - b);
  const [partial] = await store.endpointStats.durationsByHour(endpointId, start + 10 * 60_000, start + hour);
  assert.deepEqual(partial, {
    start,
    p50: sorted[Math.ceil(sorted.length * 0.5) - 1],
    p95: sorted[Math.ceil(sorted.length * 0.95) - 1],
  });

  const { sql: text, parameters } = store.endpointStats
    .durationsByHourQuery(endpointId, start, start + 4 * hour)
    .compile();
  const explain = store.dialect === 'postgres' ? 'explain (format json)' : 'explain query plan';
  const plan = JSON.stringify(
    (await store.ctx.db.executeQuery(CompiledQuery.raw(`${explain} ${text}`, [...parameters]))).rows,
  );
  assertIndexReads(plan);
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
