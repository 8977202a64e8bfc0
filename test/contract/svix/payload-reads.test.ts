import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, startReceiver } from '../../support/delivery.js';
import { assertError } from '../../support/api.js';

// A payload is shown while it is readable (not expunged, not past its own expiry), on every read of both
// surfaces: the native payload route answers 410 payload_gone, and the Svix reads, the lists with content
// and an idempotent repeat of the emit's key show `{}` (issue 42, finding 4).

const SECRET = 'card-4242-4242';

test('an idempotent repeat of a Svix emit shows the payload only while it is readable', async (t) => {
  const s = await setup(t);
  const receiver = await startReceiver(t);
  const endpoint = await s.endpoint(`${receiver.url}/hook`);
  const create = (key: string) =>
    s.api.post(
      `/api/v1/app/${s.appId}/msg`,
      { eventType: 'invoice.paid', payload: { card: SECRET } },
      { 'idempotency-key': key },
    );

  const first = await create('order-1');
  assert.equal(first.status, 202, JSON.stringify(first.body));
  assert.deepEqual(first.body.payload, { card: SECRET });
  const repeat = await create('order-1');
  assert.equal(repeat.status, 202);
  assert.equal(repeat.headers.get('idempotent-replayed'), 'true');
  assert.deepEqual(repeat.body, first.body, 'while readable, the repeat is the first answer');

  const expunge = await s.api.delete(`/api/v1/app/${s.appId}/msg/${first.body.id}/content`);
  assert.equal(expunge.status, 204);
  assertError(await s.api.get(`/api/v1/messages/${first.body.id}/payload`), 410, 'payload_gone');
  const afterExpunge = await create('order-1');
  assert.equal(afterExpunge.status, 202);
  assert.equal(afterExpunge.headers.get('idempotent-replayed'), 'true');
  assert.equal(afterExpunge.body.id, first.body.id);
  assert.deepEqual(afterExpunge.body.payload, {});
  assert.ok(!JSON.stringify(afterExpunge.body).includes(SECRET), 'the expunged payload is not replayed');

  // The kept answers themselves hold no payload.
  const kept = await s.service.store.ctx.db.selectFrom('request_replays').select('body').execute();
  assert.ok(kept.length > 0);
  assert.ok(
    kept.every((row) => !String(row.body).includes(SECRET)),
    'no payload in the replay store',
  );

  // send-example answers a message with its payload too: the same rule.
  const example = () =>
    s.api.post(
      `/api/v1/app/${s.appId}/endpoint/${endpoint.id}/send-example`,
      { eventType: 'invoice.paid' },
      { 'idempotency-key': 'example-1' },
    );
  const sent = await example();
  assert.equal(sent.status, 202, JSON.stringify(sent.body));
  assert.notDeepEqual(sent.body.payload, {});
  assert.deepEqual((await example()).body, sent.body);
  assert.equal((await s.api.delete(`/api/v1/app/${s.appId}/msg/${sent.body.id}/content`)).status, 204);
  const exampleAgain = await example();
  assert.equal(exampleAgain.headers.get('idempotent-replayed'), 'true');
  assert.deepEqual(exampleAgain.body.payload, {});
});

test('a payload past its own expiry is not shown by any read of either surface', async (t) => {
  const s = await setup(t);
  const receiver = await startReceiver(t);
  const endpoint = await s.endpoint(`${receiver.url}/hook`);
  const create = (key: string, payload: object, hours?: number) =>
    s.api.post(
      `/api/v1/app/${s.appId}/msg`,
      { eventType: 'invoice.paid', payload, ...(hours ? { payloadRetentionHours: hours } : {}) },
      { 'idempotency-key': key },
    );
  const expiring = await create('short-1', { card: SECRET }, 1);
  assert.equal(expiring.status, 202, JSON.stringify(expiring.body));
  const kept = await create('kept-1', { n: 7 });
  assert.equal(kept.status, 202);
  const id = expiring.body.id as string;

  // Past its expiry, before the hourly purge removes it (a waiting attempt may still keep it stored).
  await s.service.store.ctx.db
    .updateTable('payloads')
    .set({ expires_at: Date.now() - 1000 })
    .where('message_id', '=', id)
    .execute();

  assertError(await s.api.get(`/api/v1/messages/${id}/payload`), 410, 'payload_gone');
  const reads = {
    get: await s.api.get(`/api/v1/app/${s.appId}/msg/${id}`),
    list: await s.api.get(`/api/v1/app/${s.appId}/msg?with_content=true`),
    endpointList: await s.api.get(`/api/v1/app/${s.appId}/endpoint/${endpoint.id}/msg?with_content=true`),
    repeat: await create('short-1', { card: SECRET }, 1),
  };
  for (const [name, reply] of Object.entries(reads)) {
    assert.ok(reply.status === 200 || reply.status === 202, `${name}: ${reply.status} ${JSON.stringify(reply.body)}`);
    assert.ok(!JSON.stringify(reply.body).includes(SECRET), `${name} shows the expired payload`);
  }
  assert.deepEqual(reads.get.body.payload, {});
  assert.deepEqual(reads.list.body.data.find((m: { id: string }) => m.id === id).payload, {});
  assert.deepEqual(reads.endpointList.body.data.find((m: { id: string }) => m.id === id).payload, {});
  assert.deepEqual(reads.repeat.body.payload, {});
  assert.equal(reads.repeat.headers.get('idempotent-replayed'), 'true');

  // The one not past its expiry reads everywhere.
  assert.deepEqual(reads.list.body.data.find((m: { id: string }) => m.id === kept.body.id).payload, { n: 7 });
  assert.deepEqual(reads.endpointList.body.data.find((m: { id: string }) => m.id === kept.body.id).payload, { n: 7 });
  assert.deepEqual((await s.api.get(`/api/v1/app/${s.appId}/msg/${kept.body.id}`)).body.payload, { n: 7 });
  assert.deepEqual((await create('kept-1', { n: 7 })).body.payload, { n: 7 });
});
