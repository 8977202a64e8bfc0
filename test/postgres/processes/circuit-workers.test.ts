import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually } from '../../support/receiver.js';
import { child, database, receiver } from '../../support/burst.js';
import { bootstrap } from '../../support/client.js';

// One circuit for every worker: under two worker processes a failing endpoint's circuit opens once, one
// probe goes per cooldown, its events are raised once per change, and it holds across a restart of the
// workers (its state is the endpoint row's).

test('two workers see one circuit; it opens once, holds across their restart, and one probe closes it', async (t) => {
  const db = await database(t);
  let down = true;
  const hooks = await receiver(t, () => ({ status: down ? 500 : 200 }));
  const ops = await receiver(t);
  const env = {
    ...db.env,
    HERALD_CIRCUIT_MIN_ATTEMPTS: '6',
    HERALD_CIRCUIT_WINDOW: '10s',
    HERALD_CIRCUIT_COOLDOWN: '3s',
    HERALD_RETRY_SCHEDULE: '0s,100ms,100ms,100ms,100ms,100ms,100ms,100ms,100ms,100ms',
  };
  const api = await child(t, { ...env, HERALD_ROLE: 'api' });
  const workers = [
    await child(t, { ...env, HERALD_ROLE: 'worker' }),
    await child(t, { ...env, HERALD_ROLE: 'worker' }),
  ];
  const { test: client } = await bootstrap(api.url!);
  const app = (await client.post('/api/v1/applications', { name: 'Circuit' })).body;
  await client.post('/api/v1/operational-endpoints', {
    url: `${ops.url}/ops`,
    event_types: ['endpoint.circuit_opened', 'endpoint.circuit_closed'],
  });
  const endpoint = (await client.post('/api/v1/endpoints', { app_id: app.id, url: `${hooks.url}/flaky` })).body;
  const read = async () => (await client.get(`/api/v1/endpoints/${endpoint.id}`)).body;
  const deliveries: string[] = [];
  for (let i = 0; i < 10; i++)
    deliveries.push(
      ...(await client.post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid', payload: { i } })).body
        .delivery_ids,
    );
  const opened = await eventually(
    async () => ((await read()).circuit_state === 'open' ? read() : null),
    20_000,
    'the circuit to open',
  );
  const openUntil = Date.parse(opened.circuit_open_until);

  // Both workers restart while it is open: the new one keeps it.
  for (const worker of workers) {
    worker.process.kill('SIGTERM');
    await worker.exited;
  }
  await new Promise((resolve) => setTimeout(resolve, 100));
  const sentBefore = hooks.received.length;
  down = false;
  await child(t, { ...env, HERALD_ROLE: 'worker' });
  await child(t, { ...env, HERALD_ROLE: 'worker' });

  for (const id of deliveries)
    await eventually(
      async () => (await client.get(`/api/v1/deliveries/${id}`)).body.status === 'success',
      20_000,
      'delivered once closed',
    );
  assert.equal((await read()).circuit_state, 'closed');
  const early = hooks.received.slice(sentBefore).filter((r) => r.at < openUntil);
  assert.deepEqual(early, [], 'nothing sent until the cooldown ended, across the restart');
  // The first request after it was the probe, alone: the others came once it had answered.
  const [probe, next] = hooks.received.slice(sentBefore);
  assert.ok(next === undefined || next.at >= probe!.at, 'the probe went first');
  await eventually(async () => ops.received.length >= 2, 10_000, 'two operational events');
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.deepEqual(
    ops.received.map((r) => (JSON.parse(r.body) as { type: string }).type),
    ['endpoint.circuit_opened', 'endpoint.circuit_closed'],
    'each change raised once, whichever worker made it',
  );
});
