import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, TEST_STORE } from '../support/service.js';
import { bootstrap, Client } from '../support/client.js';
import { killChild, startChild, type Child } from '../delivery/child.js';

// Several processes may share one embedded store (HERALD_ROLE=api beside HERALD_ROLE=worker, or two API
// processes). Their write transactions must wait for each other, never fail because another process
// wrote between their first read and their first write.
test('two API processes on one SQLite file accept every concurrent emit', {
  skip: TEST_STORE !== 'sqlite' ? 'about the embedded store' : false,
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
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? apiA : onB).post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid', payload: { round, i } })),
    );
    statuses.push(...replies.map((r) => r.status));
  }
  const failed = statuses.filter((s) => s !== 201);
  assert.deepEqual(failed, [], `every emit is accepted (${failed.length} of ${statuses.length} were not)`);
  const listed = await apiA.get(`/api/v1/messages?app_id=${app.id}&limit=50`);
  assert.equal(listed.body.data.length, 50);
});
