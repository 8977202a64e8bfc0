import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startTestService, type TestService } from '../../support/service.js';
import { createPgCluster, type PgCluster } from '../../support/pg-cluster.js';
import { bootstrap } from '../../support/client.js';
import { eventually, Receiver } from '../../support/receiver.js';
import { LoadClient } from '../../support/processes.js';

// The database goes away under load and comes back. The service must answer 503 service_unavailable
// (not hang) while it is away, reconnect by itself, and deliver every message it acknowledged.
// It runs a PostgreSQL server of its own, so stopping it disturbs nobody else's tests.

interface Outcome {
  status: number | 'timeout' | 'error';
  code?: string;
  id?: string;
  phase: 'before' | 'down' | 'after';
  ms: number;
}

test('PostgreSQL stops and restarts under a burst: 503 while away, reconnects, every acknowledged message delivered', {
  timeout: 240_000,
}, async (t) => {
  let cluster: PgCluster | null = null;
  let service: TestService | null = null;
  const receiver = await new Receiver().start();
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-test-'));
  let loader: LoadClient | null = null;
  t.after(async () => {
    await service?.stop().catch(() => {});
    await loader?.close();
    await receiver.stop();
    await cluster?.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  });

  cluster = await createPgCluster();
  const url = cluster.url;
  service = await startTestService(
    { HERALD_LEASE: '5s', HERALD_ATTEMPT_TIMEOUT: '2s', HERALD_RETRY_SCHEDULE: '0s,1s,1s,1s,1s,1s,1s,1s' },
    { env: { HERALD_DATA_DIR: dataDir, HERALD_DATABASE_URL: url }, drop: async () => {} },
  );
  assert.equal(service.store.dialect, 'postgres');
  const { raw, test: api } = await bootstrap(service.url);
  const app = await api.post('/api/v1/applications', { name: 'Faults' });
  assert.equal(app.status, 201);
  const endpoint = await api.post('/api/v1/endpoints', { app_id: app.body.id, url: `${receiver.url}/hook` });
  assert.equal(endpoint.status, 201);
  await eventually(async () => service!.store.listening, 30_000, 'LISTEN in place');

  // A client that gives up after 10 s: a request that takes that long counts as hanging.
  loader = new LoadClient(service.url, raw.test_key.key, 8);
  const outcomes: Outcome[] = [];
  let phase: Outcome['phase'] = 'before';
  let sending = true;
  let n = 0;
  const sender = async () => {
    while (sending) {
      const i = n++;
      const at = phase;
      const started = Date.now();
      try {
        const reply = await loader!.post(
          '/api/v1/messages',
          { app_id: app.body.id, event_type: 'invoice.paid', payload: { i } },
          {},
          10_000,
        );
        outcomes.push({
          status: reply.status,
          code: reply.body?.error?.code,
          id: reply.body?.id,
          phase: at,
          ms: Date.now() - started,
        });
        if (reply.status === 503) assert.equal(typeof reply.body.error.request_id, 'string');
      } catch (error) {
        const timedOut = /timeout/i.test(String((error as { code?: string }).code ?? (error as Error).message));
        outcomes.push({ status: timedOut ? 'timeout' : 'error', phase: at, ms: Date.now() - started });
      }
      // Keep the burst going without saturating the machine while the database is away.
      if (phase === 'down') await new Promise((r) => setTimeout(r, 20));
    }
  };
  const senders = Array.from({ length: 8 }, sender);
  const count = (p: Outcome['phase'], status: Outcome['status']) =>
    outcomes.filter((o) => o.phase === p && o.status === status).length;

  await eventually(async () => count('before', 201) >= 200, 60_000, '200 acknowledged emits before the fault');
  await cluster.stop();
  phase = 'down';
  // While it is away: requests come back 503 promptly rather than hanging.
  await eventually(async () => count('down', 503) >= 20, 60_000, '503 answers while the database is down');
  assert.equal(await service.store.healthy(), false);
  const health = await fetch(`${service.url}/healthz`);
  assert.equal(health.status, 503);
  await cluster.start();
  phase = 'after';
  await eventually(
    async () => count('after', 201) >= 200,
    60_000,
    '200 acknowledged emits after the database came back',
  );
  sending = false;
  await Promise.all(senders);

  const summary = ['before', 'down', 'after'].map((p) => {
    const mine = outcomes.filter((o) => o.phase === p);
    const statuses = [...new Set(mine.map((o) => o.status))]
      .map((s) => `${s}×${mine.filter((o) => o.status === s).length}`)
      .join(' ');
    return `${p}: ${statuses}; slowest ${Math.max(0, ...mine.map((o) => o.ms))} ms`;
  });
  t.diagnostic(summary.join(' | '));

  assert.equal(
    outcomes.filter((o) => o.status === 'timeout' || o.status === 'error').length,
    0,
    `no request hung or lost its connection: ${summary.join(' | ')}`,
  );
  for (const o of outcomes) {
    if (o.status === 201) continue;
    assert.equal(o.status, 503, `only 201 or 503: ${JSON.stringify(o)}`);
    assert.equal(o.code, 'service_unavailable');
  }

  // Reconnected by itself: the pool answers, and the listener is LISTENing again on a new connection.
  assert.equal((await fetch(`${service.url}/healthz`)).status, 200);
  await eventually(async () => service!.store.listening, 30_000, 'LISTEN reconnected');
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    const listeners = await admin.query(
      `select count(*)::int as n from pg_stat_activity where application_name = 'herald-listen'`,
    );
    assert.equal(listeners.rows[0].n, 1);
  } finally {
    await admin.end();
  }

  // Every acknowledged message arrives (at least once).
  const acknowledged = outcomes.filter((o) => o.status === 201).map((o) => o.id!);
  const arrived = () => new Set(receiver.received.map((r) => String(r.headers['webhook-id'])));
  await eventually(
    async () => acknowledged.every((id) => arrived().has(id)),
    120_000,
    `all ${acknowledged.length} acknowledged messages delivered (have ${acknowledged.filter((id) => arrived().has(id)).length})`,
  );
  t.diagnostic(
    `${acknowledged.length} acknowledged, all delivered; ${receiver.received.length - arrived().size} repeated deliveries`,
  );
});

test('the LISTEN connection reconnects by itself after the server restarts', { timeout: 120_000 }, async (t) => {
  const { TaskListener } = await import('../../../src/store/notify.js');
  const cluster = await createPgCluster();
  let notified = 0;
  let connects = 0;
  const listener = new TaskListener({
    connectionString: cluster.url,
    onNotify: () => notified++,
    onListening: () => connects++,
  });
  t.after(async () => {
    await listener.stop();
    await cluster.destroy();
  });
  listener.start();
  await eventually(async () => listener.listening, 30_000, 'listening');
  const notify = async () => {
    const client = new pg.Client({ connectionString: cluster.url });
    await client.connect();
    await client.query(`select pg_notify('herald_tasks', '')`);
    await client.end();
  };
  const before = notified;
  await notify();
  await eventually(async () => notified > before, 10_000, 'notification before restart');

  await cluster.restart();
  await eventually(async () => connects >= 2 && listener.listening, 60_000, 'listening again after restart');
  const after = notified;
  await notify();
  await eventually(async () => notified > after, 10_000, 'notification after restart');
});
