import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { startCheckpointThread } from '../../../src/store/db.js';
import { createTestDatabase, startTestService } from '../../support/service.js';
import { bootstrap } from '../../support/client.js';
import { eventually } from '../../support/receiver.js';

// SQLite checkpoints (copying committed pages from the WAL into the database file) run on a thread of
// their own (src/store/db.ts), not inside the commits of the event loop.
test('committed pages reach the database file without the service checkpointing, and close folds the WAL in', async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  // API role: no delivery worker writing beside the emits.
  const service = await startTestService({ HERALD_ROLE: 'api' }, database);
  let stopped = false;
  t.after(async () => {
    if (!stopped) await service.stop();
  });
  const file = join(database.env.HERALD_DATA_DIR!, 'herald.db');
  const { test: api } = await bootstrap(service.url);
  const app = (await api.post('/api/v1/applications', { name: 'checkpoints' })).body;
  await api.post('/api/v1/endpoints', { app_id: app.id, url: 'http://127.0.0.1:9/never' });

  const before = statSync(file).size;
  // 120 emits add ~100 KB of rows, in well under the 4,000 WAL pages at which the service's own connection
  // would checkpoint. Only the thread copies them into the file.
  const payload = { note: 'x'.repeat(500) };
  for (let round = 0; round < 4; round++) {
    const replies = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        api.post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid', payload: { ...payload, round, i } }),
      ),
    );
    assert.ok(replies.every((r) => r.status === 201));
  }
  const grown = await eventually(
    async () => (statSync(file).size - before > 60_000 ? statSync(file).size : false),
    5_000,
    'the database file to grow',
  );
  assert.ok(grown > before);

  // Closing stops the thread first, so the service's connection is the last one: SQLite then folds the
  // WAL into the database and removes it.
  stopped = true;
  await service.close();
  assert.equal(existsSync(`${file}-wal`), false, 'the WAL is folded in and removed on close');
});

test('a checkpoint thread that ends on its own hands checkpoints back; one that is stopped does not', async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  // No database file there: the thread fails at start, as it would on a lasting error.
  let failed = 0;
  const broken = startCheckpointThread(join(database.env.HERALD_DATA_DIR!, 'missing.db'), () => failed++);
  await eventually(async () => failed === 1, 5_000, 'the failure to be reported');
  await broken.stop();
  assert.equal(failed, 1);

  const service = await startTestService({ HERALD_ROLE: 'api' }, database);
  await service.close();
  let stoppedFailures = 0;
  const healthy = startCheckpointThread(join(database.env.HERALD_DATA_DIR!, 'herald.db'), () => stoppedFailures++);
  await new Promise((resolve) => setTimeout(resolve, 100));
  await healthy.stop();
  assert.equal(stoppedFailures, 0, 'stopping is not a failure');
});
