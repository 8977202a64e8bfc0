import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import { startTestService } from '../../support/service.js';
import { loadConfig } from '../../../src/config.js';
import { Store } from '../../../src/store/index.js';
import { SECRET_KEY, startHerald, stopAll, type HeraldProcess } from '../../support/processes.js';
import { bootstrap } from '../../support/client.js';
import { eventually, Receiver } from '../../support/receiver.js';
import { assertAcknowledgedDelivered, emitter, fill, mountSmallDisk } from '../../support/full-disk.js';

// The full-disk suite (issue 26, part 3): the embedded store's directory on a small tmpfs that fills up
// while the service runs. Emits answer 503 storage_full (never 500, never 201 for a message not saved),
// outcomes that cannot be recorded are tried again, and once space is freed the service carries on
// without a restart: everything acknowledged is there and delivered, retention and checkpoints work.

/** A tmpfs of `mb` megabytes, unmounted with the test; where mounting is not allowed, why. */
function smallDisk(t: TestContext, mb: number): string | { skip: string } {
  const disk = mountSmallDisk(mb);
  if ('skip' in disk) return disk;
  t.after(() => disk.unmount());
  return disk.dir;
}

/** The service under test: in this process (role all) or as API and worker processes. */
interface Herald {
  url: string;
  /** Log lines (pino JSON) of the process or processes that deliver. */
  logs(): string[];
  /** True while every process of the service runs. */
  alive(): boolean;
  /** A store on the same directory, for the checks after space is freed. */
  store(): Promise<Store>;
}

const SETTINGS = {
  HERALD_RETRY_SCHEDULE: '0s,200ms,500ms,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s',
  // An outcome that cannot be recorded is tried again when its lease runs out: soon, in this test.
  HERALD_ATTEMPT_TIMEOUT: '5s',
  HERALD_LEASE: '7s',
  // Everything is past retention by the end, so the purge there has the whole history to remove.
  HERALD_RETENTION: '1s',
  HERALD_IDEMPOTENCY_TTL: '1s',
  // The held answers are kept whole (see fullDisk).
  HERALD_RESPONSE_BODY_LIMIT: '262144',
};

async function fullDisk(t: TestContext, start: (dir: string) => Promise<Herald>): Promise<void> {
  const dir = smallDisk(t, 24);
  if (typeof dir !== 'string') return void t.skip(dir.skip);
  const herald = await start(dir);
  const receiver = await new Receiver().start();
  t.after(() => receiver.stop());
  // The first request for a `held` message is answered once the store refuses emits (the disk is full),
  // with an answer larger than an emit: its outcome cannot be recorded where an emit did not fit, not even
  // in the WAL's unused tail a refused emit leaves (which a small outcome may fill). Answered then rather
  // than after a set time, which a loaded machine may reach before the store has used up its reserve.
  const held = new Set<string>();
  const heldAnswer = 'h'.repeat(200_000);
  let diskFull!: () => void;
  const full = new Promise<void>((resolve) => (diskFull = resolve));
  receiver.respond = (r) => {
    const id = String(r.headers['webhook-id']);
    if (!r.body.includes('"key":"held-') || held.has(id)) return { status: 200 };
    held.add(id);
    return { status: 200, body: heldAnswer, until: full };
  };
  const { test: api } = await bootstrap(herald.url);
  const app = await api.post('/api/v1/applications', { name: 'Full disk' });
  const endpoint = await api.post('/api/v1/endpoints', { app_id: app.body.id, url: `${receiver.url}/hook` });
  assert.equal(endpoint.status, 201);
  const big = 'x'.repeat(60_000);
  const { emit, acked, refused } = emitter(api, app.body.id, () => ({ big }));
  for (let i = 0; i < 5; i++) assert.equal(await emit(`before-${i}`), 201);

  for (let i = 0; i < 3; i++) assert.equal(await emit(`held-${i}`), 201);
  await eventually(async () => held.size === 3, 20_000, 'the held messages sent');
  const filler = fill(dir);
  // Until the store has used up what SQLite held in reserve (free pages, the WAL's length), emits succeed.
  for (let i = 0; refused.length < 5 && i < 300; i++) await emit(`full-${i}`);
  assert.ok(refused.length >= 5, `the store refused emits once the disk was full (${acked.size} acknowledged)`);
  // Deliveries go on while the disk is full; the held ones are answered now (or have timed out), and their
  // outcomes wait for space.
  diskFull();
  await new Promise((r) => setTimeout(r, 2_000));
  assert.equal((await api.get('/healthz')).status, 200, 'the service is still up');
  assert.ok(herald.alive(), 'no process ended');

  unlinkSync(filler);
  for (const key of refused) assert.ok([200, 201].includes(await emit(key)), `${key} accepted after space was freed`);
  for (let i = 0; i < 5; i++) assert.equal(await emit(`after-${i}`), 201);

  // Everything acknowledged is stored, delivered and recorded as delivered.
  const store = await herald.store();
  t.after(() => store.close());
  const db = store.ctx.db;
  await assertAcknowledgedDelivered(acked, receiver, db);
  for (const id of acked.values()) assert.equal((await api.get(`/api/v1/messages/${id}`)).status, 200);
  // An attempt answered while the disk was full could not record its outcome and is made again after its
  // lease; unless its commit found room the refused emits did not (the WAL's unused tail can hold a small
  // outcome where an emit of 60 KB did not fit). The held ones are answered then, so some meet it.
  const unrecorded = herald
    .logs()
    .filter((l) => l.includes('attempt could not be recorded'))
    .map((l) => JSON.parse(l) as { err: { message: string }; delivery_id: string; time: number });
  assert.ok(unrecorded.length > 0, 'some outcomes met the full disk');
  for (const line of unrecorded) assert.match(line.err.message, /disk is full/);
  // An outcome refused at every try is made again after its lease: its message arrives twice. One whose
  // last try committed before the store's error came back (the error is then not the write's) is recorded
  // as delivered at a time before the error was logged, and is not made again (the receiver answers every
  // request 200, so a delivery's only success before that time is the attempt the error was about).
  const recordedBefore = await db
    .selectFrom('attempt_log')
    .select(['delivery_id', 'created_at'])
    .where('status', '=', 'success')
    .where(
      'delivery_id',
      'in',
      unrecorded.map((line) => line.delivery_id),
    )
    .execute();
  const lostIds = unrecorded
    .filter((line) => !recordedBefore.some((a) => a.delivery_id === line.delivery_id && a.created_at <= line.time))
    .map((line) => line.delivery_id);
  const lost =
    lostIds.length === 0
      ? []
      : await db.selectFrom('deliveries').select('message_id').where('id', 'in', lostIds).execute();
  const twice = [...acked.values()].filter(
    (id) => receiver.received.filter((r) => r.headers['webhook-id'] === id).length > 1,
  );
  for (const { message_id } of lost) assert.ok(twice.includes(message_id), `${message_id}: outcome lost, made again`);
  assert.ok(!herald.logs().some((l) => /internal_error|uncaught/i.test(l)), 'no 500 and nothing uncaught');
  // An attempt whose lease or input the store refused before its request is made once, after its lease.
  const notMade = herald
    .logs()
    .filter((l) => l.includes('attempt not made'))
    .map((l) => JSON.parse(l) as { err: { message: string }; delivery_id: string });
  for (const line of notMade) assert.match(line.err.message, /disk is full/);
  const onlyNotMade = notMade
    .map((line) => line.delivery_id)
    .filter((id) => !unrecorded.some((line) => line.delivery_id === id));
  const sentOnce =
    onlyNotMade.length === 0
      ? []
      : await db.selectFrom('deliveries').select('message_id').where('id', 'in', onlyNotMade).execute();
  for (const { message_id } of sentOnce)
    assert.ok(!twice.includes(message_id), `${message_id}: not made, then sent once`);
  t.diagnostic(
    `${unrecorded.length} outcomes not recorded while full, ${notMade.length} attempts not made, ${twice.length} messages sent again`,
  );
  t.diagnostic(
    `${acked.size} acknowledged, ${refused.length} refused while full, ${receiver.received.length} requests`,
  );

  // Retention and checkpoints work on the same store afterwards.
  await new Promise((r) => setTimeout(r, 1_100));
  const purged = await store.purgeExpired();
  assert.equal(purged.messages, acked.size, `the purge removed every settled message: ${JSON.stringify(purged)}`);
  assert.equal(purged.payloads, acked.size);
  // The other processes' checkpoint threads and reads may hold the WAL for a moment (busy), and a write
  // may land right after a truncation: a truncating checkpoint succeeds within a bounded number of tries.
  let checkpoint: { busy: number; log: number; checkpointed: number } | undefined;
  let walSize = -1;
  for (let tries = 0; tries < 50; tries += 1) {
    [checkpoint] = await sql<{ busy: number; log: number; checkpointed: number }>`pragma wal_checkpoint(TRUNCATE)`
      .execute(db)
      .then((r) => r.rows);
    walSize = statSync(join(dir, 'herald.db-wal')).size;
    if (checkpoint!.busy === 0 && walSize === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(checkpoint!.busy, 0, JSON.stringify(checkpoint));
  assert.equal(walSize, 0, 'the WAL was folded into the database and truncated');
}

test(
  'a full disk: emits answer 503 storage_full, outcomes are retried, and the service carries on once space is freed',
  {
    timeout: 60_000,
  },
  (t) =>
    fullDisk(t, async (dir) => {
      const logLines: string[] = [];
      const service = await startTestService(
        { HERALD_DATA_DIR: dir, ...SETTINGS },
        { env: { HERALD_DATA_DIR: dir }, drop: async () => {} },
        logLines,
      );
      t.after(() => service.stop());
      return {
        url: service.url,
        logs: () => logLines,
        alive: () => true,
        store: async () => {
          // The checkpoint thread is still the one checkpointing: had it ended, the service's connection
          // would be back at SQLite's 1,000 pages (db.ts).
          const [auto] = await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`
            .execute(service.store.ctx.db)
            .then((r) => r.rows);
          assert.equal(auto!.wal_autocheckpoint, 4000, 'the checkpoint thread outlived the full disk');
          return Store.open(service.config);
        },
      };
    }),
);

test(
  'a full disk under an API process and a worker process (its queue on a thread): the same, neither process ends',
  {
    timeout: 60_000,
  },
  (t) =>
    fullDisk(t, async (dir) => {
      const env = { HERALD_DATA_DIR: dir, ...SETTINGS, HERALD_LOG_LEVEL: 'warn' };
      const processes: HeraldProcess[] = [];
      t.after(() => stopAll(processes));
      processes.push(await startHerald('api', env));
      processes.push(await startHerald('worker', env));
      return {
        url: processes[0]!.url,
        logs: () =>
          processes[1]!
            .output()
            .split('\n')
            .filter((l) => l.startsWith('{')),
        alive: () => processes.every((p) => p.alive()),
        store: () => Store.open(loadConfig({ HERALD_SECRET_KEY: SECRET_KEY, ...env, HERALD_LOG_LEVEL: 'silent' })),
      };
    }),
);

test('a store at its page limit (SQLITE_FULL without a tmpfs, so this runs unprivileged): 503 storage_full, nothing saved, then 201', async (t) => {
  const service = await startTestService();
  t.after(() => service.stop());
  const { test: api } = await bootstrap(service.url);
  const app = await api.post('/api/v1/applications', { name: 'Page limit' });
  const db = service.store.ctx.db;
  const count = async () =>
    Number((await sql<{ n: number }>`select count(*) as n from messages`.execute(db)).rows[0]!.n);
  const [{ page_count: pages }] = (await sql<{ page_count: number }>`pragma page_count`.execute(db)).rows as [
    { page_count: number },
  ];
  // The file may not grow: the next emit that needs a new page fails with SQLITE_FULL at its commit.
  await sql.raw(`pragma max_page_count = ${pages}`).execute(db);
  const payload = { big: 'y'.repeat(200_000) };
  const emit = () =>
    api.post(
      '/api/v1/messages',
      { app_id: app.body.id, event_type: 'invoice.paid', payload },
      { 'idempotency-key': 'k1' },
    );
  const before = await count();
  const refused = await emit();
  assert.equal(refused.status, 503, JSON.stringify(refused.body));
  assert.equal(refused.body.error.code, 'storage_full');
  assert.equal(refused.headers.get('retry-after'), '5');
  assert.equal(await count(), before, 'nothing saved');
  await sql.raw('pragma max_page_count = 1073741823').execute(db);
  const accepted = await emit();
  assert.equal(accepted.status, 201, JSON.stringify(accepted.body));
  assert.equal(await count(), before + 1);
});
