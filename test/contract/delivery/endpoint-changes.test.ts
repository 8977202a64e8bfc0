import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually } from '../../support/receiver.js';
import { setup, startReceiver, verifies } from '../../support/delivery.js';

// A worker claims attempts ahead of sending them, and they may wait behind a slow receiver for longer than
// an operator takes to change the endpoint. An attempt that starts a while after its claim reads its
// endpoint again: a new URL, a new secret, a deletion or a disabling made meanwhile applies to it.
// HERALD_ENDPOINT_CONCURRENCY=1: one attempt in flight, the next claimed and waiting for the slot.

const SLOW_MS = 1_500;

test("attempts claimed before an endpoint's URL and secret changed go to the new URL, signed with the new secret", {
  timeout: 60_000,
}, async (t) => {
  const s = await setup(t, { HERALD_ENDPOINT_CONCURRENCY: '1' });
  const receiver = await startReceiver(t, (r) =>
    r.path === '/old' ? { status: 200, delayMs: SLOW_MS } : { status: 200 },
  );
  const endpoint = await s.endpoint(`${receiver.url}/old`);
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push((await s.emit({ i })).deliveryIds[0]!);
  await receiver.waitFor(1); // the first is in flight; the second is claimed, waiting for the slot

  assert.equal((await s.api.patch(`/api/v1/endpoints/${endpoint.id}`, { url: `${receiver.url}/new` })).status, 200);
  const rotated = await s.api.post(`/api/v1/endpoints/${endpoint.id}/rotate-secret`);
  assert.equal(rotated.status, 200);
  for (const id of ids) await s.until(id, (d) => d.status === 'success', 'delivered');

  const at = (path: string) => receiver.received.filter((r) => r.path === path);
  assert.equal(at('/old').length, 1, 'only the attempt already in flight went to the old URL');
  assert.equal(at('/new').length, 2);
  for (const r of at('/new')) {
    assert.ok(verifies(r, rotated.body.signing_secret), 'signed with the new secret');
    assert.equal(String(r.headers['webhook-signature']).split(' ').length, 2, 'and with the old one, in its grace');
  }
});

test('attempts claimed before an endpoint was deleted or disabled are not sent', { timeout: 60_000 }, async (t) => {
  const s = await setup(t, { HERALD_ENDPOINT_CONCURRENCY: '1' });
  const receiver = await startReceiver(t, () => ({ status: 200, delayMs: SLOW_MS }));
  const deleted = await s.endpoint(`${receiver.url}/deleted`, { event_types: ['invoice.paid'] });
  const disabled = await s.endpoint(`${receiver.url}/disabled`, { event_types: ['invoice.created'] });
  for (let i = 0; i < 2; i++) await s.emit({ i }, 'invoice.paid');
  for (let i = 0; i < 2; i++) await s.emit({ i }, 'invoice.created');
  await eventually(async () => receiver.received.length === 2, 10_000, 'the first attempt of each in flight');

  assert.equal((await s.api.delete(`/api/v1/endpoints/${deleted.id}`)).status, 204);
  assert.equal((await s.api.patch(`/api/v1/endpoints/${disabled.id}`, { status: 'disabled' })).status, 200);
  await new Promise((resolve) => setTimeout(resolve, SLOW_MS * 2 + 500)); // past when the waiting ones would have gone
  assert.deepEqual(receiver.received.map((r) => r.path).sort(), ['/deleted', '/disabled']);
  // The waiting ones record no attempt (none was made): stopped with their endpoint, as those not claimed are.
  const deliveriesOf = async (endpointId: string) =>
    (
      await s.service.store.ctx.db
        .selectFrom('deliveries')
        .select(['status', 'attempt_count'])
        .where('endpoint_id', '=', endpointId)
        .execute()
    )
      .map((d) => `${d.status}/${d.attempt_count}`)
      .sort();
  await eventually(
    async () => (await deliveriesOf(deleted.id)).join() === 'failed/0,success/1',
    5_000,
    "the deleted endpoint's deliveries",
  );
  await eventually(
    async () => (await deliveriesOf(disabled.id)).join() === 'disabled/0,success/1',
    5_000,
    "the disabled endpoint's deliveries",
  );
});
