import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { unlinkSync } from 'node:fs';
import {
  adminQuery,
  createTestDatabase,
  startTestService,
  type TestDatabase,
  testObjectName,
} from '../../support/service.js';
import { bootstrap } from '../../support/client.js';
import { Receiver } from '../../support/receiver.js';
import { assertAcknowledgedDelivered, emitter, fill, mountSmallDisk } from '../../support/full-disk.js';

// PostgreSQL's side of the full-disk suite (the embedded store's is test/store/full-disk.test.ts): the
// test database lives in a tablespace on a small tmpfs that fills up while the service runs. The server
// answers 53100 (disk_full) when a table or index cannot grow; emits answer 503 storage_full, nothing
// is stored for them, and once space is freed the service carries on without a restart.

test('PostgreSQL on a full disk: emits answer 503 storage_full (53100), nothing is half-saved, and all carries on once space is freed', {
  timeout: 90_000,
}, async (t) => {
  const disk = mountSmallDisk(32);
  if ('skip' in disk) return void t.skip(disk.skip);
  // The tablespace's directory belongs to the server's user; its name is a test object's, so a sweep of a
  // killed run's leftovers recognises it.
  const tablespace = testObjectName();
  let database: TestDatabase | null = null;
  let service: Awaited<ReturnType<typeof startTestService>> | null = null;
  // One hook, in this order: the service lets go of the database, the database and its tablespace go,
  // then the disk; a step that fails does not keep the later ones from running.
  t.after(async () => {
    try {
      await service?.stop();
    } finally {
      await database?.drop().catch(() => {});
      await adminQuery(`drop tablespace if exists ${tablespace}`).catch(() => {});
      disk.unmount();
    }
  });
  // The server must be able to use a directory of this machine as its own.
  try {
    execFileSync('chown', ['postgres:postgres', disk.dir], { stdio: 'pipe' });
    await adminQuery(`create tablespace ${tablespace} location '${disk.dir}'`);
  } catch (error) {
    return void t.skip(`PostgreSQL cannot use a directory here as the postgres user: ${(error as Error).message}`);
  }
  database = await createTestDatabase({ tablespace });
  const logLines: string[] = [];
  service = await startTestService(
    {
      HERALD_RETRY_SCHEDULE: '0s,200ms,500ms,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s',
      // An outcome that cannot be recorded is tried again when its lease runs out: soon, in this test.
      HERALD_ATTEMPT_TIMEOUT: '5s',
      HERALD_LEASE: '7s',
    },
    database,
    logLines,
  );

  const receiver = await new Receiver().start();
  t.after(() => receiver.stop());
  const { test: api } = await bootstrap(service.url);
  const app = await api.post('/api/v1/applications', { name: 'Full disk' });
  const endpoint = await api.post('/api/v1/endpoints', { app_id: app.body.id, url: `${receiver.url}/hook` });
  assert.equal(endpoint.status, 201);
  // Random text: PostgreSQL compresses large values, and a repeated character would take no room.
  const { emit, acked, refused } = emitter(api, app.body.id, () => ({
    noise: randomBytes(45_000).toString('base64'),
  }));
  for (let i = 0; i < 5; i++) assert.equal(await emit(`before-${i}`), 201);

  const filler = fill(disk.dir);
  // Until the tables have used up the free room in their last pages, emits succeed.
  for (let i = 0; refused.length < 5 && i < 300; i++) await emit(`full-${i}`);
  assert.ok(refused.length >= 5, `the store refused emits once the disk was full (${acked.size} acknowledged)`);
  assert.equal((await api.get('/healthz')).status, 200, 'the service is still up');

  unlinkSync(filler);
  for (const key of refused) assert.ok([200, 201].includes(await emit(key)), `${key} accepted after space was freed`);
  for (let i = 0; i < 5; i++) assert.equal(await emit(`after-${i}`), 201);

  // Everything acknowledged is stored once, delivered, and recorded as delivered.
  await assertAcknowledgedDelivered(acked, receiver, service.store.ctx.db);
  assert.ok(!logLines.some((l) => /internal_error|uncaught/i.test(l)), 'no 500 and nothing uncaught');
  t.diagnostic(`${acked.size} acknowledged, ${refused.length} refused while full`);
});
