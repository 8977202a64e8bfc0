import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CLAIMED_PAYLOAD_LIMIT } from '../../../src/store/queue/index.js';
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
