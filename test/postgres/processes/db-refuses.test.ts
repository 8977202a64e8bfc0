import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { PG_ADMIN_URL, startTestService } from '../../support/service.js';
import { bootstrap } from '../../support/client.js';
import { eventually } from '../../support/receiver.js';

// A database that is up but takes no connections (ALTER DATABASE … ALLOW_CONNECTIONS false, as during
// maintenance) is away for now, as a stopped server is: 503 with Retry-After, not 500, and back by itself.

test('a database that refuses connections answers 503 service_unavailable, then recovers by itself', {
  timeout: 60_000,
}, async (t) => {
  const service = await startTestService({ HERALD_ROLE: 'api' });
  const name = new URL(service.config.databaseUrl!).pathname.slice(1);
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  const allow = (on: boolean) => admin.query(`alter database "${name}" allow_connections ${on}`);
  t.after(async () => {
    await allow(true);
    await admin.end();
    await service.stop();
  });
  const { test: api } = await bootstrap(service.url);
  assert.equal((await api.get('/api/v1/applications')).status, 200);

  await allow(false);
  await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1', [name]);
  const refused = await eventually(
    async () => {
      const reply = await api.get('/api/v1/applications');
      return reply.status !== 200 ? reply : null;
    },
    10_000,
    'a request that meets the refusing database',
  );
  assert.equal(refused.status, 503, JSON.stringify(refused.body));
  assert.equal(refused.body.error.code, 'service_unavailable');
  assert.equal(refused.headers.get('retry-after'), '1');

  await allow(true);
  await eventually(async () => (await api.get('/api/v1/applications')).status === 200, 10_000, 'served again');
});
