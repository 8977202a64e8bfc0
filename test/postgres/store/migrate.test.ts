import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { createTestDatabase } from '../../support/service.js';
import { runHerald, startHerald, stopAll, type HeraldProcess } from '../../support/processes.js';

// Versioned migrations on PostgreSQL: kysely's Migrator takes a session advisory lock, so processes that
// start at once on an empty database queue up behind the first, which applies each migration exactly once.

test('three processes started at once on an empty database all come up; each migration runs once', {
  timeout: 180_000,
}, async (t) => {
  const database = await createTestDatabase();
  const processes: HeraldProcess[] = [];
  t.after(async () => {
    await stopAll(processes);
    await database.drop();
  });

  processes.push(
    ...(await Promise.all([
      startHerald('api', database.env),
      startHerald('api', database.env),
      startHerald('all', database.env),
    ])),
  );
  for (const p of processes) {
    const health = await p.client.get('/healthz');
    assert.equal(health.status, 200, p.output());
  }

  const sql = new pg.Client({ connectionString: database.env.HERALD_DATABASE_URL });
  await sql.connect();
  try {
    const { rows } = await sql.query('select name from kysely_migration order by name');
    assert.ok(rows.length >= 1);
    assert.equal(new Set(rows.map((r) => r.name)).size, rows.length, 'each migration recorded once');
    assert.ok(rows.some((r) => r.name === '001_initial'));
  } finally {
    await sql.end();
  }
});

test('`migrate` run three times at once on an empty database succeeds every time', {
  timeout: 180_000,
}, async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  const runs = await Promise.all([1, 2, 3].map(() => runHerald(['migrate'], database.env)));
  for (const run of runs) {
    assert.equal(run.code, 0, run.output);
    assert.match(run.output, /database schema is up to date/);
  }
  const sql = new pg.Client({ connectionString: database.env.HERALD_DATABASE_URL });
  await sql.connect();
  try {
    const { rows } = await sql.query('select name, count(*)::int as n from kysely_migration group by name');
    assert.ok(rows.length >= 1);
    for (const row of rows) assert.equal(row.n, 1, `${row.name} recorded once`);
    // The schema is complete: the newest tables exist, and the newest migration moved the queue onto the
    // deliveries (its table gone).
    const tables = await sql.query(
      `select count(*)::int as n from information_schema.tables where table_name in ('payloads', 'idempotency_keys')`,
    );
    assert.equal(tables.rows[0].n, 2);
    const columns = await sql.query(
      `select count(*)::int as n from information_schema.columns where table_name = 'deliveries' and column_name in ('run_at', 'lease_until', 'queued_after')`,
    );
    assert.equal(columns.rows[0].n, 3);
    const gone = await sql.query(
      `select count(*)::int as n from information_schema.tables where table_name = 'delivery_tasks'`,
    );
    assert.equal(gone.rows[0].n, 0);
  } finally {
    await sql.end();
  }
});
