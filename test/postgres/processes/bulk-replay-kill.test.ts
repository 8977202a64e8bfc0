import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { eventually } from '../../support/receiver.js';
import { arrivals, child, database, emitMany, organization, receiver } from '../../support/burst.js';
import { BASE_ENV } from '../../support/child.js';
import { loadConfig } from '../../../src/config.js';
import { Store } from '../../../src/store/index.js';
import { EMPTY_QUEUE } from '../../../src/domain/queue-slot.js';

// A bulk replay across a worker SIGKILL, with real processes: the task resumes in another worker from its
// last batch recorded and queues nothing twice (test/contract/delivery/bulk-replay.test.ts proves the same
// batch by batch on both stores, with a lease let run out instead of a kill).

test('a worker SIGKILLed in the middle of a bulk replay: another finishes it, and each delivery is sent once', async (t) => {
  const db = await database(t);
  const hooks = await receiver(t);
  const env = { ...db.env, HERALD_RETRY_SCHEDULE: '0s' };
  // Accepted by an API-only process, and marked delivered without a request: only replays send.
  const api = await child(t, { ...env, HERALD_ROLE: 'api' });
  const { api: client, appId } = await organization(api.url!, hooks.url);
  const since = new Date(Date.now() - 1000).toISOString();
  const accepted = await emitMany(client, appId, 1200, 16);
  assert.equal(accepted.length, 1200);
  const store = await Store.open(loadConfig({ ...BASE_ENV, ...env }));
  try {
    await store.ctx.db
      .updateTable('deliveries')
      .set({ status: 'success', ...EMPTY_QUEUE })
      .execute();
  } finally {
    await store.close();
  }
  const endpointId = (await client.get(`/api/v1/endpoints?app_id=${appId}`)).body.data[0].id as string;
  const task = async (id: string) => (await client.get(`/api/v1/background-tasks/${id}`)).body;

  // A replay's batches are quick: the kill may come after the last one. Each replay that finishes sends
  // every delivery once, so the count per message is the number of replays, whichever way each went.
  let replays = 0;
  let killedMidway = false;
  for (let tries = 0; tries < 3 && !killedMidway; tries++) {
    const worker = await child(t, { ...env, HERALD_ROLE: 'worker' });
    const started = await client.post(`/api/v1/endpoints/${endpointId}/bulk-replay`, { since });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    replays++;
    const seen = await eventually(
      async () => {
        const read = await task(started.body.id);
        return read.progress.done > 0 || read.status !== 'running' ? read : null;
      },
      20_000,
      'the first batch',
    );
    worker.process.kill('SIGKILL');
    await worker.exited;
    const after = await task(started.body.id);
    killedMidway = after.status === 'running' && seen.progress.done < 1200;
    // The next worker takes the task over once the dead one's lease runs out, from its last batch.
    const next = await child(t, { ...env, HERALD_ROLE: 'worker' });
    const done = await eventually(
      async () => {
        const read = await task(started.body.id);
        return read.status === 'running' ? null : read;
      },
      40_000,
      'the task to finish',
    );
    assert.deepEqual([done.status, done.progress], ['finished', { done: 1200, total: 1200 }]);
    await eventually(async () => hooks.received.length >= replays * 1200, 30_000, 'every replayed request');
    next.process.kill('SIGTERM');
    await next.exited;
  }
  assert.ok(killedMidway, 'one kill landed while the task was under way');
  // Every delivery reached the receiver once per replay at least (a request the killed worker had in
  // flight goes again: at-least-once), and the tasks queued exactly one attempt per delivery per replay.
  const counts = arrivals(hooks);
  assert.equal(counts.size, 1200);
  assert.ok([...counts.values()].every((n) => n >= replays));
  const reopened = await Store.open(loadConfig({ ...BASE_ENV, ...env }));
  try {
    const made = await sql<{ n: number | string; deliveries: number | string }>`
      select n, count(*) as deliveries from (
        select delivery_id, count(distinct attempt_number) as n from attempt_log group by delivery_id
      ) per_delivery group by n`.execute(reopened.ctx.db);
    assert.deepEqual(
      made.rows.map((row) => [Number(row.n), Number(row.deliveries)]),
      [[replays, 1200]],
      'one attempt number per delivery per replay: none queued twice',
    );
  } finally {
    await reopened.close();
  }
});
