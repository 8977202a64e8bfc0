import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SecretBox } from '../../../src/domain/secrets.js';
import { eventually } from '../../support/receiver.js';
import { killChild, startChild } from '../../support/child.js';
import { setup, startReceiver, verifies } from '../../support/delivery.js';

// An endpoint whose signing secret a worker cannot open (sealed under another HERALD_SECRET_KEY: one
// process deployed with the wrong key) must not hold up anyone else's deliveries claimed with it. That
// worker makes and records no attempt for it (not the receiver's failure) and hands its tasks back at
// once, for a worker with the right key, instead of holding or churning through its backlog.

const OTHER_KEY = 'a-different-herald-secret-key-0123456789';

test("a secret sealed under another key holds up only its endpoint's attempts, which go to a worker that can open it", {
  timeout: 90_000,
}, async (t) => {
  const s = await setup(t);
  const receiver = await startReceiver(t);
  const good = await s.endpoint(`${receiver.url}/good`);
  const sealedElsewhere = await s.endpoint(`${receiver.url}/sealed-elsewhere`);
  const db = s.service.store.ctx.db;
  await db
    .updateTable('endpoints')
    .set({ secret_sealed: new SecretBox(OTHER_KEY).seal(sealedElsewhere.secret) })
    .where('id', '=', sealedElsewhere.id)
    .execute();

  for (let i = 0; i < 20; i++) await s.emit({ i });
  const arrivedAt = (path: string) => receiver.received.filter((r) => r.path === path);
  await eventually(async () => arrivedAt('/good').length === 20, 15_000, "the other endpoint's deliveries");
  assert.ok(arrivedAt('/good').every((r) => verifies(r, good.secret)));

  // Its own: handed back (not held under a lease), not attempted, nothing recorded, still pending.
  const tasksOfSealed = () =>
    db
      .selectFrom('deliveries')
      .select(['id', 'next_attempt', 'lease_owner', 'lease_until', 'run_at'])
      .where('endpoint_id', '=', sealedElsewhere.id)
      .orderBy('id')
      .execute();
  const handedBack = await eventually(
    async () => {
      const tasks = await tasksOfSealed();
      return tasks.length === 20 && tasks.every((task) => task.run_at !== null && task.lease_owner === null)
        ? tasks
        : null;
    },
    10_000,
    'its tasks handed back',
  );
  // A claim writes the lease and a release sets run_at again: unchanged, they were not claimed over and over.
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  assert.deepEqual(await tasksOfSealed(), handedBack, 'and left alone by this worker since');
  assert.equal(arrivedAt('/sealed-elsewhere').length, 0);
  const ofSealed = () =>
    db
      .selectFrom('deliveries')
      .select(['status', 'attempt_count'])
      .where('endpoint_id', '=', sealedElsewhere.id)
      .execute();
  assert.ok((await ofSealed()).every((d) => d.status === 'pending' && d.attempt_count === 0));
  assert.equal(
    (await s.service.store.endpoints.get({ orgId: s.orgId, livemode: false }, sealedElsewhere.id))?.status,
    'active',
    'its health untouched',
  );

  // A worker process with the key that sealed it takes them.
  const other = await startChild({ ...s.service.database.env, HERALD_ROLE: 'worker', HERALD_SECRET_KEY: OTHER_KEY });
  try {
    await eventually(
      async () => arrivedAt('/sealed-elsewhere').length >= 20,
      20_000,
      'its attempts, by the other worker',
    );
    assert.ok(arrivedAt('/sealed-elsewhere').every((r) => verifies(r, sealedElsewhere.secret)));
    await eventually(
      async () => (await ofSealed()).every((d) => d.status === 'success' && d.attempt_count === 1),
      10_000,
      'one attempt each, all delivered',
    );
  } finally {
    await killChild(other);
  }
});
