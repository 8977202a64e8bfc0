import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase } from '../../support/service.js';
import { bootstrap, Client } from '../../support/client.js';
import { killChild, startChild, type Child } from '../../support/child.js';
import { runHerald } from '../../support/processes.js';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { connectSqlite, migrate } from '../../../src/store/db.js';

// Several processes may share one embedded store (HERALD_ROLE=api beside HERALD_ROLE=worker, or two API
// processes). Their write transactions must wait for each other, never fail because another process
// wrote between their first read and their first write.
test('two API processes on one SQLite file accept every concurrent emit', {
  timeout: 120_000,
}, async (t) => {
  const database = await createTestDatabase();
  const children: Child[] = [];
  t.after(async () => {
    await Promise.all(children.map(killChild));
    await database.drop();
  });
  const env = { ...database.env, HERALD_ROLE: 'api' };
  children.push(await startChild(env));
  children.push(await startChild(env));
  const [a, b] = children.map((c) => c.url!);
  const { test: apiA } = await bootstrap(a!);
  const onB = new Client(b!, apiA.key);
  const app = (await apiA.post('/api/v1/applications', { name: 'shared' })).body;
  await apiA.post('/api/v1/endpoints', { app_id: app.id, url: 'http://127.0.0.1:9/never' });

  const statuses: number[] = [];
  for (let round = 0; round < 10; round++) {
    const replies = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        (i % 2 === 0 ? apiA : onB).post('/api/v1/messages', {
          app_id: app.id,
          event_type: 'invoice.paid',
          payload: { round, i },
        }),
      ),
    );
    statuses.push(...replies.map((r) => r.status));
  }
  const failed = statuses.filter((s) => s !== 201);
  assert.deepEqual(failed, [], `every emit is accepted (${failed.length} of ${statuses.length} were not)`);
  const listed = await apiA.get(`/api/v1/messages?app_id=${app.id}&limit=50`);
  assert.equal(listed.body.data.length, 50);
});

test('processes started at once on a new data directory migrate it once and share one development key', {
  timeout: 120_000,
}, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'herald-migrate-race-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // The new file's write lock is held while three processes start, so they all reach the migration
  // together and are let go at the same moment.
  const holder = new Database(join(dir, 'herald.db'));
  holder.pragma('journal_mode = WAL');
  holder.exec('begin immediate');
  // No HERALD_SECRET_KEY: in development each process reads or creates the data dir's key.
  const runs = Promise.all(
    [1, 2, 3].map(() => runHerald(['migrate'], { HERALD_DATA_DIR: dir, HERALD_SECRET_KEY: '' })),
  );
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  holder.exec('commit');
  for (const run of await runs) assert.equal(run.code, 0, run.output);
  const rows = holder.prepare('select name, count(*) as n from kysely_migration group by name').all() as {
    name: string;
    n: number;
  }[];
  holder.close();
  assert.ok(rows.some((r) => r.name === '001_initial'));
  for (const row of rows) assert.equal(row.n, 1, `${row.name} recorded once`);
  assert.deepEqual(
    readdirSync(dir).filter((name) => name.startsWith('secret.key')),
    ['secret.key'],
    'one key file, no drafts left',
  );
});

test("a new data directory and its database files are readable by the service's user only", async (t) => {
  const parent = mkdtempSync(join(tmpdir(), 'herald-modes-'));
  t.after(() => rmSync(parent, { recursive: true, force: true }));
  const dir = join(parent, 'data');
  const run = await runHerald(['migrate'], { HERALD_DATA_DIR: dir, HERALD_SECRET_KEY: '' });
  assert.equal(run.code, 0, run.output);
  const mode = (name: string) => (statSync(join(dir, name)).mode & 0o777).toString(8);
  assert.equal(mode('.'), '700');
  // The -wal and -shm files exist while a connection is open.
  const { database } = connectSqlite(join(dir, 'herald.db'), { fileMustExist: true });
  t.after(() => database.close());
  for (const name of ['herald.db', 'herald.db-wal', 'herald.db-shm', 'secret.key'])
    assert.equal(mode(name), '600', name);
});

test('SQLite migrations run inside one write transaction, where the applied ones are read (what serializes processes)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'herald-migrate-tx-'));
  const { database, db } = connectSqlite(join(dir, 'probe.db'));
  t.after(async () => {
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  });
  const seen: boolean[] = [];
  const probe = { up: async () => void seen.push(database.inTransaction) };
  assert.deepEqual(await migrate(db, { '001_probe': probe }), ['001_probe']);
  assert.deepEqual(await migrate(db, { '001_probe': probe, '002_probe': probe }), ['002_probe']);
  assert.deepEqual(seen, [true, true]);
});
