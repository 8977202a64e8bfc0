import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { createTestDatabase } from '../../support/service.js';
import { bootstrap } from '../../support/client.js';
import { randomToken } from '../../../src/domain/ids.js';
import { LoadClient, startHerald, stopAll, type HeraldProcess } from '../../support/processes.js';

// What API processes share through PostgreSQL (idempotency keys, a unique constraint) and through Redis
// (rate-limit counters), and what they do not share without Redis.

const REDIS_URL = process.env.SUITE_REDIS_URL ?? 'redis://127.0.0.1:6379';

test('20 concurrent emits with one Idempotency-Key across two API processes create one message', {
  timeout: 180_000,
}, async (t) => {
  const database = await createTestDatabase();
  const processes: HeraldProcess[] = [];
  const loaders: LoadClient[] = [];
  t.after(async () => {
    await stopAll(processes);
    await Promise.all(loaders.map((l) => l.close()));
    await database.drop();
  });
  processes.push(...(await Promise.all([startHerald('api', database.env), startHerald('api', database.env)])));
  const { test: api, raw } = await bootstrap(processes[0]!.url);
  const app = await api.post('/api/v1/applications', { name: 'Idem' });
  assert.equal(app.status, 201);
  const endpoint = await api.post('/api/v1/endpoints', { app_id: app.body.id, url: 'http://127.0.0.1:9/hook' });
  assert.equal(endpoint.status, 201);
  loaders.push(...processes.map((p) => new LoadClient(p.url, raw.test_key.key, 10)));

  const key = `idem-${randomToken(8)}`;
  const replies = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      loaders[i % 2]!.post(
        '/api/v1/messages',
        { app_id: app.body.id, event_type: 'invoice.paid', payload: { i } },
        { 'idempotency-key': key },
      ),
    ),
  );
  for (const reply of replies)
    assert.ok(reply.status === 201 || reply.status === 200, `status ${reply.status} ${JSON.stringify(reply.body)}`);
  assert.equal(replies.filter((r) => r.status === 201).length, 1, 'exactly one emit created the message');
  assert.equal(new Set(replies.map((r) => r.body.id)).size, 1, 'every reply names the same message');
  assert.equal(
    new Set(replies.map((r) => JSON.stringify(r.body.delivery_ids))).size,
    1,
    'every reply names the same deliveries',
  );
  assert.equal(replies.filter((r) => r.body.idempotent === true).length, 19);

  const sql = new pg.Client({ connectionString: database.env.HERALD_DATABASE_URL });
  await sql.connect();
  try {
    const { rows } = await sql.query(
      'select (select count(*)::int from messages) as messages, (select count(*)::int from deliveries) as deliveries',
    );
    assert.deepEqual(rows[0], { messages: 1, deliveries: 1 });
  } finally {
    await sql.end();
  }
});

/** Sends 30 requests at once, alternating between the API processes; returns statuses and how long the burst took. */
async function burst(loaders: LoadClient[], appId: string) {
  const started = Date.now();
  const replies = await Promise.all(
    Array.from({ length: 30 }, (_, i) =>
      loaders[i % loaders.length]!.post('/api/v1/messages', {
        app_id: appId,
        event_type: 'invoice.paid',
        payload: { i },
      }),
    ),
  );
  return {
    replies,
    spanMs: Date.now() - started,
    ok: replies.filter((r) => r.status === 201).length,
    limited: replies.filter((r) => r.status === 429),
  };
}

async function rateLimitedSetup(t: { after: (fn: () => Promise<void>) => void }, extraEnv: Record<string, string>) {
  const database = await createTestDatabase();
  const processes: HeraldProcess[] = [];
  const loaders: LoadClient[] = [];
  t.after(async () => {
    await stopAll(processes);
    await Promise.all(loaders.map((l) => l.close()));
    await database.drop();
  });
  const env = { ...database.env, HERALD_PLANS: 'starter:10', HERALD_DEFAULT_PLAN: 'starter', ...extraEnv };
  processes.push(...(await Promise.all([startHerald('api', env), startHerald('api', env)])));
  const { raw } = await bootstrap(processes[0]!.url);
  assert.equal(raw.organization.plan, 'starter');
  loaders.push(...processes.map((p) => new LoadClient(p.url, raw.test_key.key, 30)));
  // The application is created through the limited API too: wait out its window before the burst.
  let app = await loaders[0]!.post('/api/v1/applications', { name: 'Limits' });
  for (let i = 0; app.status === 429 && i < 20; i++) {
    await new Promise((r) => setTimeout(r, 250));
    app = await loaders[0]!.post('/api/v1/applications', { name: 'Limits' });
  }
  assert.equal(app.status, 201);
  await new Promise((r) => setTimeout(r, 1_100));
  return { loaders, appId: app.body.id as string };
}

test('with Redis, two API processes share one rate limit per organization', { timeout: 180_000 }, async (t) => {
  // A namespace of its own, so parallel runs on one Redis never count each other's requests.
  const prefix = `herald-rl-test-${randomToken(8)}:`;
  const { loaders, appId } = await rateLimitedSetup(t, { HERALD_REDIS_URL: REDIS_URL, HERALD_REDIS_PREFIX: prefix });
  const { replies, spanMs, ok, limited } = await burst(loaders, appId);
  t.diagnostic(`shared limit: ${ok} of 30 accepted, ${limited.length} rate limited, burst took ${spanMs} ms`);
  assert.equal(ok + limited.length, 30, `only 201 or 429: ${replies.map((r) => r.status).join(',')}`);
  assert.ok(ok >= 1);
  // One window is 1 s and opens at the organization's first counted request; a burst that took longer on a
  // loaded machine may reach into a second window.
  assert.ok(ok <= (spanMs < 1_000 ? 10 : 20), `${ok} accepted across both processes, limit is 10/s shared`);
  for (const reply of limited) {
    assert.equal(reply.body.error.code, 'rate_limited');
    assert.match(String(reply.headers['retry-after']), /^\d+$/);
    assert.equal(typeof reply.body.error.request_id, 'string');
  }
});

test('without Redis, each API process counts on its own', { timeout: 180_000 }, async (t) => {
  const { loaders, appId } = await rateLimitedSetup(t, {});
  const { spanMs, ok, limited } = await burst(loaders, appId);
  t.diagnostic(`per-process limits: ${ok} of 30 accepted, ${limited.length} rate limited, burst took ${spanMs} ms`);
  // Each process admits its own first 10 of the 15 it gets: more than one shared limit would allow.
  assert.ok(ok >= 20, `${ok} accepted; two processes with 10/s each should admit at least 20`);
});
