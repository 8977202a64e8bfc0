import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SecretBox } from '../../src/domain/secrets.js';
import { eventually } from '../support/receiver.js';
import { setup, startReceiver, verifies } from './helpers.js';

// An endpoint whose signing secret this worker cannot open (sealed under another HERALD_SECRET_KEY: a
// process deployed with the wrong key) must not hold up anyone else's deliveries claimed with it, and its
// own attempts must wait, not be used up or lost, until a worker with the right key takes them.

test("a secret sealed under another key holds up only its endpoint's attempts, which wait for a worker that can open it", { timeout: 60_000 }, async (t) => {
  const s = await setup(t, { HERALD_ATTEMPT_TIMEOUT: '1s', HERALD_LEASE: '3s' });
  const receiver = await startReceiver(t);
  const good = await s.endpoint(`${receiver.url}/good`);
  const sealedElsewhere = await s.endpoint(`${receiver.url}/sealed-elsewhere`);
  const db = s.service.store.ctx.db;
  const reseal = (key: string) =>
    db.updateTable('endpoints').set({ secret_sealed: new SecretBox(key).seal(sealedElsewhere.secret) }).where('id', '=', sealedElsewhere.id).execute();
  await reseal('a-different-herald-secret-key-0123456789');

  for (let i = 0; i < 20; i++) await s.emit({ i });
  const arrivedAt = (path: string) => receiver.received.filter((r) => r.path === path);
  await eventually(async () => arrivedAt('/good').length === 20, 15_000, "the other endpoint's deliveries");
  assert.ok(arrivedAt('/good').every((r) => verifies(r, good.secret)));

  // Its own: not attempted, nothing recorded, still pending.
  const ofSealed = () => db.selectFrom('deliveries').select(['id', 'status', 'attempt_count']).where('endpoint_id', '=', sealedElsewhere.id).execute();
  assert.equal(arrivedAt('/sealed-elsewhere').length, 0);
  const before = await ofSealed();
  assert.equal(before.length, 20);
  assert.ok(before.every((d) => d.status === 'pending' && d.attempt_count === 0), JSON.stringify(before));
  assert.equal((await s.service.store.endpoints.get({ orgId: s.orgId, livemode: false }, sealedElsewhere.id))?.status, 'active', 'its health untouched');

  // A worker with the right key (here: the secret sealed again under this one) takes them after their lease.
  await reseal(s.service.config.secretKey);
  await eventually(async () => arrivedAt('/sealed-elsewhere').length >= 20, 15_000, 'the waiting attempts, after their lease');
  assert.ok(arrivedAt('/sealed-elsewhere').every((r) => verifies(r, sealedElsewhere.secret)));
  await eventually(async () => (await ofSealed()).every((d) => d.status === 'success' && d.attempt_count === 1), 10_000, 'one attempt each, all delivered');
});
