import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createTestDatabase, type TestDatabase } from '../support/service.js';
import { bootstrap, type Client } from '../support/client.js';
import { eventually, Receiver } from '../support/receiver.js';
import { BASE_ENV, killChild, startChild, type Child } from './child.js';
import { loadConfig } from '../../src/config.js';
import { Store } from '../../src/store/index.js';

// Nothing is lost: every message the API acknowledged reaches the receiver even when the service is
// killed mid-delivery, SIGTERM lets in-flight attempts finish and records them, and the worker runs as
// its own process next to an API-only process on the same store.

async function database(t: TestContext): Promise<TestDatabase> {
  const db = await createTestDatabase();
  t.after(() => db.drop());
  return db;
}

async function child(t: TestContext, env: Record<string, string>): Promise<Child> {
  const started = await startChild(env);
  t.after(() => killChild(started));
  return started;
}

async function receiver(t: TestContext, respond?: Receiver['respond']): Promise<Receiver> {
  const r = await new Receiver().start();
  if (respond) r.respond = respond;
  t.after(() => r.stop());
  return r;
}

async function organization(url: string, receiverUrl: string): Promise<{ api: Client; appId: string }> {
  const { test: api } = await bootstrap(url);
  const app = await api.post('/api/v1/applications', { name: 'Crash' });
  const endpoint = await api.post('/api/v1/endpoints', { app_id: app.body.id, url: `${receiverUrl}/hook` });
  assert.equal(endpoint.status, 201);
  return { api, appId: app.body.id };
}

/** Emits `count` messages, `parallel` at a time; returns the ids the API acknowledged (2xx). */
async function emitMany(api: Client, appId: string, count: number, parallel: number): Promise<string[]> {
  const accepted: string[] = [];
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const i = next++;
      try {
        const reply = await api.post('/api/v1/messages', { app_id: appId, event_type: 'invoice.paid', payload: { i } });
        if (reply.status >= 200 && reply.status < 300) accepted.push(reply.body.id);
      } catch {
        // No answer: not acknowledged, so not promised.
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, lane));
  return accepted;
}

/** How many times each message id reached the receiver. */
function arrivals(r: Receiver): Map<string, number> {
  const counts = new Map<string, number>();
  for (const request of r.received) {
    const id = String(request.headers['webhook-id']);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

test('a worker-only process delivers what an API-only process accepted on the same store', async (t) => {
  const db = await database(t);
  const hooks = await receiver(t);
  const common = { ...db.env, HERALD_RETRY_SCHEDULE: '0s,500ms,1s' };
  // The API process first: it creates the schema both share.
  const api = await child(t, { ...common, HERALD_ROLE: 'api' });
  const worker = await child(t, { ...common, HERALD_ROLE: 'worker' });
  assert.equal(worker.url, null);
  const { api: client, appId } = await organization(api.url!, hooks.url);
  const accepted = await emitMany(client, appId, 10, 2);
  assert.equal(accepted.length, 10);
  await eventually(
    async () => accepted.every((id) => arrivals(hooks).has(id)),
    30_000,
    'worker process to deliver every message',
  );
  const delivery = await client.get(`/api/v1/messages/${accepted[0]}/deliveries`);
  await eventually(
    async () => (await client.get(`/api/v1/deliveries/${delivery.body.data[0].id}`)).body.status === 'success',
    10_000,
    'success recorded',
  );
});

test('SIGKILL mid-delivery loses nothing: every acknowledged message arrives after a restart', async (t) => {
  const db = await database(t);
  // Slowed a little, so the burst is accepted well before it is delivered and the kill lands mid-delivery.
  const hooks = await receiver(t, () => ({ status: 200, delayMs: 150 }));
  const env = {
    ...db.env,
    HERALD_LEASE: '2s',
    HERALD_ATTEMPT_TIMEOUT: '1s',
    HERALD_ENDPOINT_CONCURRENCY: '4',
    HERALD_RETRY_SCHEDULE: '0s,300ms,1s,2s,5s',
  };
  const first = await child(t, env);
  const { api, appId } = await organization(first.url!, hooks.url);

  const accepted = await emitMany(api, appId, 200, 8);
  assert.equal(accepted.length, 200);
  await eventually(async () => hooks.received.length >= 20, 30_000, 'deliveries to start');
  first.process.kill('SIGKILL');
  const exit = await first.exited;
  assert.equal(exit.signal, 'SIGKILL');
  const deliveredBeforeKill = arrivals(hooks).size;
  assert.ok(
    deliveredBeforeKill < accepted.length,
    `the kill must land mid-delivery (${deliveredBeforeKill} of ${accepted.length} delivered)`,
  );

  const second = await child(t, { ...env, PORT: new URL(first.url!).port });
  await eventually(
    async () => accepted.every((id) => arrivals(hooks).has(id)),
    90_000,
    'every acknowledged message to arrive after the restart',
  ).catch((error) => {
    const missing = accepted.filter((id) => !arrivals(hooks).has(id));
    throw new Error(
      `${(error as Error).message}: ${missing.length} missing, e.g. ${missing.slice(0, 3).join(', ')}\n${second.output.join('')}`,
    );
  });
  const counts = arrivals(hooks);
  const duplicates = [...counts.values()].reduce((sum, n) => sum + n - 1, 0);
  console.log(
    `# SIGKILL: ${accepted.length} acknowledged, ${deliveredBeforeKill} delivered before the kill, all delivered after restart; ${duplicates} duplicate requests`,
  );
  for (const id of accepted) assert.ok(counts.has(id));
});

/**
 * SIGTERM lets in-flight attempts finish and records them. `split`: an API process and a worker process
 * (on the embedded store the worker then records through its queue thread, which must outlive the attempts).
 */
async function sigtermDrains(t: TestContext, split: boolean): Promise<void> {
  const db = await database(t);
  const hooks = await receiver(t, () => ({ status: 200, delayMs: 500 }));
  const env = { ...db.env, HERALD_ENDPOINT_CONCURRENCY: '4', HERALD_ATTEMPT_TIMEOUT: '5s' };
  const front = split ? await child(t, { ...env, HERALD_ROLE: 'api' }) : null;
  const first = await child(t, split ? { ...env, HERALD_ROLE: 'worker' } : env);
  const { api, appId } = await organization((front ?? first).url!, hooks.url);
  const accepted = await emitMany(api, appId, 24, 4);
  assert.equal(accepted.length, 24);
  await eventually(async () => hooks.received.length >= 6, 30_000, 'attempts in flight');

  first.process.kill('SIGTERM');
  const bound = setTimeout(() => first.process.kill('SIGKILL'), 20_000);
  const exit = await first.exited;
  clearTimeout(bound);
  assert.deepEqual(exit, { code: 0, signal: null }, `clean exit:\n${first.output.join('')}`);
  const requestsMade = hooks.received.length;
  assert.ok(requestsMade < accepted.length, 'SIGTERM landed before everything was delivered');

  // Every request the service made before exiting was answered and recorded: none was abandoned.
  const store = await Store.open(loadConfig({ ...BASE_ENV, ...env }));
  try {
    const row = await sql<{ n: number | string }>`select count(*) as n from attempts where status = 'success'`.execute(
      store.ctx.db,
    );
    assert.equal(Number(row.rows[0]!.n), requestsMade, 'each in-flight attempt was recorded as a success before exit');
  } finally {
    await store.close();
  }

  await child(t, split ? { ...env, HERALD_ROLE: 'worker' } : { ...env, PORT: new URL(first.url!).port });
  await eventually(
    async () => accepted.every((id) => arrivals(hooks).has(id)),
    60_000,
    'the rest delivered after restart',
  );
  const duplicates = hooks.received.length - arrivals(hooks).size;
  assert.equal(duplicates, 0, 'a clean stop repeats nothing');
}

test('SIGTERM drains: the process exits 0, in-flight attempts are recorded, and a restart delivers the rest', (t) =>
  sigtermDrains(t, false));

test('SIGTERM drains a worker-only process beside an API-only one the same way', (t) => sigtermDrains(t, true));
