import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { eventually } from '../../support/receiver.js';
import { BASE_ENV } from '../../support/child.js';
import { arrivals, child, database, emitMany, organization, receiver } from '../../support/burst.js';
import { loadConfig } from '../../../src/config.js';
import { Store } from '../../../src/store/index.js';

// Nothing is lost: every message the API acknowledged reaches the receiver even when the service is
// killed mid-delivery, SIGTERM lets in-flight attempts finish and records them, and the worker runs as
// its own process next to an API-only process on the same store.

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
    const row = await sql<{
      n: number | string;
    }>`select count(*) as n from attempt_log where status = 'success'`.execute(store.ctx.db);
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
