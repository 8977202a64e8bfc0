import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AttemptInput, Queue } from '../../src/store/queue.js';
import { openStore, outcome } from './helpers.js';

// Operational events are written by the transaction that records what raises them (an outbox): a batch of
// outcomes and its events commit together, so recording the same outcomes again raises nothing, and a
// 2xx that recovers a delivery raises its event on PostgreSQL too, where 2xx batches are one statement.

const A = 'wrk_outbox_a';

/** Claims the one due task of `endpointId` (the operational endpoint's tasks are left queued). */
async function claimOne(queue: Queue, owner: string, endpointId: string): Promise<AttemptInput> {
  const claimed = await queue.claimLoaded(owner, 10, { only: endpointId });
  assert.equal(claimed.length, 1, 'one task claimed');
  return claimed[0]!.input!;
}

test('outcomes raise their operational events in their own transaction, once', { timeout: 60_000 }, async (t) => {
  const { store, emit, scope, endpointId, appId } = await openStore(t, { HERALD_RETRY_SCHEDULE: '0s,0s,0s,0s' });
  const { row: op } = await store.endpoints.createOperational(scope, { url: 'http://127.0.0.1:9/ops' });
  const db = store.ctx.db;
  const raised = async () =>
    (
      await db
        .selectFrom('messages')
        .innerJoin('payloads', 'payloads.message_id', 'messages.id')
        .select(['messages.id', 'messages.event_type', 'messages.app_id', 'payloads.body'])
        .where('messages.app_id', '=', op.app_id)
        .orderBy('messages.id')
        .execute()
    ).map((row) => ({ ...row, data: JSON.parse(row.body) as Record<string, unknown> }));
  assert.deepEqual(await raised(), [], 'creating an operational endpoint raises nothing');

  const [messageId] = await emit(1);
  for (let n = 1; n <= 3; n++) {
    const input = await claimOne(store.queue, A, endpointId);
    const items = [{ input, result: outcome(500) }];
    assert.deepEqual(await store.queue.completeMany(items, A), [true]);
    // Recorded again (its first commit went unanswered): its attempt exists, nothing is raised again.
    assert.deepEqual(await store.queue.completeMany(items, A), [false]);
  }
  assert.deepEqual(
    (await raised()).map((m) => m.event_type),
    ['message.attempt.failing'],
    'failing once, at the third failure',
  );
  await store.queue.completeMany([{ input: await claimOne(store.queue, A, endpointId), result: outcome(500) }], A);
  assert.deepEqual(
    (await raised()).map((m) => m.event_type),
    ['message.attempt.failing', 'message.attempt.exhausted'],
  );

  // The manual retry's 2xx, recorded as a batch of successes only: the delivery recovers, once.
  const delivery = await db
    .selectFrom('deliveries')
    .select('id')
    .where('message_id', '=', messageId!)
    .executeTakeFirstOrThrow();
  assert.equal(await store.deliveries.retry(scope, delivery.id), 5);
  const manual = await claimOne(store.queue, A, endpointId);
  const success = [{ input: manual, result: outcome(200) }];
  assert.deepEqual(await store.queue.completeMany(success, A), [true]);
  assert.deepEqual(await store.queue.completeMany(success, A), [false]);
  const events = await raised();
  assert.deepEqual(
    events.map((m) => m.event_type),
    ['message.attempt.failing', 'message.attempt.exhausted', 'message.attempt.recovered'],
  );
  assert.deepEqual(events[2]!.data, {
    app_id: appId,
    app_uid: null,
    endpoint_id: endpointId,
    message_id: messageId,
    delivery_id: delivery.id,
    last_attempt: {
      attempt_number: 5,
      response_status: 200,
      error: null,
      created_at: new Date(success[0]!.result.at).toISOString(),
    },
  });
  // Each event is queued for the operational endpoint, as an emit's delivery is.
  const queued = await db
    .selectFrom('deliveries')
    .innerJoin('delivery_tasks', 'delivery_tasks.delivery_id', 'deliveries.id')
    .select(['deliveries.message_id', 'deliveries.endpoint_id', 'deliveries.status'])
    .where('deliveries.endpoint_id', '=', op.id)
    .execute();
  assert.deepEqual(
    queued.map((row) => row.message_id).sort(),
    events.map((m) => m.id),
  );

  // A later 2xx of a delivery that never announced trouble raises nothing (the single statement's path).
  await emit(1);
  await store.queue.completeMany([{ input: await claimOne(store.queue, A, endpointId), result: outcome(200) }], A);
  assert.equal((await raised()).length, 3);
});
