import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type AttemptInput, CLAIMED_PAYLOAD_LIMIT } from '../../../src/store/queue/index.js';
import { openStore } from '../../support/store.js';

// A delivery worker holds what it claims until a slot is free, so a claim brings payloads only up to
// CLAIMED_PAYLOAD_LIMIT; a larger one is marked to be loaded when its attempt starts.

test('a claim leaves out payloads over the limit and marks them to load later; load brings them whole', {
  timeout: 60_000,
}, async (t) => {
  const { store, emit } = await openStore(t);
  const large = `{"pad":"${'é'.repeat(CLAIMED_PAYLOAD_LIMIT / 2)}"}`; // fewer characters than the limit, more bytes
  const small = `{"pad":"${'x'.repeat(CLAIMED_PAYLOAD_LIMIT - 10)}"}`; // exactly the limit: still comes along
  const [largeId, smallId, goneId] = await emit(3, (i) => [large, small, '{"gone":true}'][i]!);
  // Retention removed this one's payload: no payload at all, which is not "later".
  await store.ctx.db.deleteFrom('payloads').where('message_id', '=', goneId!).execute();

  const claimed = await store.queue.claimLoaded('wrk_inputs', 10);
  const byMessage = new Map(claimed.map(({ input }) => [input!.delivery.messageId, input!]));
  assert.deepEqual(
    [largeId, smallId, goneId].map((id) => [
      byMessage.get(id!)!.payloadJson?.length ?? null,
      byMessage.get(id!)!.payloadLater,
    ]),
    [
      [null, true],
      [small.length, false],
      [null, false],
    ],
  );
  const [loaded] = await store.queue.load([claimed.find(({ input }) => input!.delivery.messageId === largeId)!.task]);
  assert.equal(loaded!.payloadJson, large, 'loaded whole when the attempt starts');
  assert.equal(loaded!.payloadLater, false);
});

test("each input carries its own delivery's endpoint as stored, one deleted meanwhile none, claimed or loaded", {
  timeout: 60_000,
}, async (t) => {
  const { store, emit, scope, appId, endpointId } = await openStore(t);
  const { row: second } = await store.endpoints.create(scope, { appId, url: 'http://127.0.0.1:9/second' });
  const { row: gone } = await store.endpoints.create(scope, { appId, url: 'http://127.0.0.1:9/gone' });
  await store.ctx.db.updateTable('endpoints').set({ rate_limit: 7 }).where('id', '=', second.id).execute();
  // Each message fans out to the three endpoints: a claim's tasks interleave them.
  await emit(3);
  await store.ctx.db.deleteFrom('endpoints').where('id', '=', gone.id).execute();
  const urls = new Map([
    [endpointId, 'http://127.0.0.1:9/hook'],
    [second.id, 'http://127.0.0.1:9/second'],
  ]);
  const seen = (inputs: { task: { endpoint_id: string }; input: AttemptInput | null }[]) =>
    inputs.map(({ task, input }) => [
      task.endpoint_id,
      input!.endpoint?.id ?? null,
      input!.endpoint?.url ?? null,
      input!.endpoint?.rateLimit ?? null,
    ]);
  const expected = (tasks: { endpoint_id: string }[]) =>
    tasks.map(({ endpoint_id: id }) =>
      id === gone.id ? [id, null, null, null] : [id, id, urls.get(id)!, id === second.id ? 7 : null],
    );
  const claimed = await store.queue.claimLoaded('wrk_inputs', 20);
  assert.equal(claimed.length, 9);
  assert.deepEqual(seen(claimed), expected(claimed.map(({ task }) => task)));
  const loaded = await store.queue.load(claimed.map(({ task }) => task));
  assert.deepEqual(
    seen(loaded.map((input) => ({ task: input.task, input }))),
    expected(loaded.map((input) => input.task)),
  );
  assert.equal(loaded.length, 9);
  // A read's tasks of one endpoint share its one endpoint object (a claim crossing threads carries it once).
  for (const inputs of [claimed.map(({ input }) => input!), loaded]) {
    const ofSecond = inputs.filter((input) => input.task.endpoint_id === second.id);
    assert.equal(ofSecond.length, 3);
    assert.ok(ofSecond.every((input) => input.endpoint === ofSecond[0]!.endpoint));
  }
  // A task whose delivery is gone loads nothing (and reads no endpoint of none).
  await store.ctx.db.deleteFrom('deliveries').where('id', '=', claimed[0]!.task.delivery_id).execute();
  assert.deepEqual(await store.queue.load([claimed[0]!.task]), []);
});
