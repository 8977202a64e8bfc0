import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { eventually } from '../../support/receiver.js';
import { BASE_ENV } from '../../support/child.js';
import { arrivals, child, database, emitMany, organization, receiver } from '../../support/burst.js';
import { loadConfig } from '../../../src/config.js';
import { Store } from '../../../src/store/index.js';
import { DEAD_AFTER_MS } from '../../../src/delivery/heartbeat.js';

// A worker that dies has its claimed attempts taken over within 10 s (decisions.md, "Recovery after a
// crash"), by a restarted service or by another live worker, at default settings: the lease (HERALD_LEASE,
// 60 s here) is not what brings them back. A live worker's slow attempt is never taken from it.

const TAKEOVER_BOUND_MS = 10_000;

/** Until every id in `ids` has arrived; fails with what is missing after `timeoutMs`. */
async function allArrive(hooks: Awaited<ReturnType<typeof receiver>>, ids: string[], timeoutMs: number, what: string) {
  await eventually(async () => ids.every((id) => arrivals(hooks).has(id)), timeoutMs, what).catch((error) => {
    const missing = ids.filter((id) => !arrivals(hooks).has(id));
    throw new Error(`${(error as Error).message}: ${missing.length} of ${ids.length} missing`);
  });
}

test('a SIGKILLed service restarted on its store delivers every acknowledged message within 10 s of the restart', async (t) => {
  const db = await database(t);
  // Slow while the first process runs, so it dies holding claimed attempts; fast afterwards, so what the
  // restart delivers is bounded by the takeover and not by the receiver.
  let slow = true;
  const hooks = await receiver(t, () => ({ status: 200, delayMs: slow ? 400 : 0 }));
  const first = await child(t, db.env);
  const { api, appId } = await organization(first.url!, hooks.url);
  const accepted = await emitMany(api, appId, 120, 8);
  assert.equal(accepted.length, 120);
  await eventually(async () => hooks.received.length >= 16, 30_000, 'deliveries to start');
  first.process.kill('SIGKILL');
  await first.exited;
  slow = false;
  const before = arrivals(hooks).size;
  assert.ok(before < accepted.length, `the kill lands mid-delivery (${before} delivered)`);

  await child(t, { ...db.env, PORT: new URL(first.url!).port });
  const restarted = Date.now();
  await allArrive(hooks, accepted, 60_000, 'every acknowledged message after the restart');
  const tookMs = Math.max(...hooks.received.map((r) => r.at)) - restarted;
  console.log(
    `# restart: ${before} delivered before the kill, the rest by ${tookMs} ms after the restarted service was up`,
  );
  assert.ok(tookMs < TAKEOVER_BOUND_MS, `delivered ${tookMs} ms after the restart, not within 10 s`);
});

test('two workers: when one is SIGKILLed, the other delivers what it had claimed within 10 s', async (t) => {
  const db = await database(t);
  let slow = true;
  const hooks = await receiver(t, () => ({ status: 200, delayMs: slow ? 400 : 0 }));
  const api = await child(t, { ...db.env, HERALD_ROLE: 'api' });
  const doomed = await child(t, { ...db.env, HERALD_ROLE: 'worker' });
  const { api: client, appId } = await organization(api.url!, hooks.url);
  const accepted = await emitMany(client, appId, 120, 8);
  assert.equal(accepted.length, 120);
  // Only the doomed worker runs while the first deliveries go out, so it holds claimed attempts.
  await eventually(async () => hooks.received.length >= 16, 30_000, 'deliveries to start');
  const survivor = await child(t, { ...db.env, HERALD_ROLE: 'worker' });
  doomed.process.kill('SIGKILL');
  await doomed.exited;
  const killed = Date.now();
  slow = false;
  await allArrive(hooks, accepted, 60_000, 'every acknowledged message after the kill');
  const tookMs = Math.max(...hooks.received.map((r) => r.at)) - killed;
  console.log(`# takeover: the last message arrived ${tookMs} ms after the kill`);
  assert.ok(tookMs < TAKEOVER_BOUND_MS, `delivered ${tookMs} ms after the kill, not within 10 s`);
  assert.ok(survivor.process.exitCode === null, 'the surviving worker still runs');
});

test("a live worker's attempt that outlasts the dead-worker bound is not taken from it", async (t) => {
  const db = await database(t);
  // Each request takes longer than a dead worker's silence (DEAD_AFTER_MS), within the attempt timeout.
  const hooks = await receiver(t, () => ({ status: 200, delayMs: DEAD_AFTER_MS + 2_500 }));
  const api = await child(t, { ...db.env, HERALD_ROLE: 'api' });
  await child(t, { ...db.env, HERALD_ROLE: 'worker' });
  await child(t, { ...db.env, HERALD_ROLE: 'worker' });
  const { api: client, appId } = await organization(api.url!, hooks.url);
  const accepted = await emitMany(client, appId, 4, 4);
  assert.equal(accepted.length, 4);
  await allArrive(hooks, accepted, 30_000, 'every message sent');

  const store = await Store.open(loadConfig({ ...BASE_ENV, ...db.env }));
  t.after(() => store.close());
  await eventually(
    async () => {
      const { rows } = await sql<{
        n: number | string;
      }>`select count(*) as n from deliveries where status = 'success'`.execute(store.ctx.db);
      return Number(rows[0]!.n) === accepted.length;
    },
    30_000,
    'every delivery recorded as a success',
  );
  // Waited out past another beat or two of both workers: nothing was handed to the other worker and sent again.
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  assert.equal(hooks.received.length, accepted.length, 'each message was sent once');
  const { rows } = await sql<{ n: number | string }>`select count(*) as n from attempt_log`.execute(store.ctx.db);
  assert.equal(Number(rows[0]!.n), accepted.length, 'one attempt each');
});
