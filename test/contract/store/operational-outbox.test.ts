import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore, outcome } from '../../support/store.js';
import { claimOne } from '../../support/outbox.js';
import { newId } from '../../../src/domain/ids.js';
import type { CausedEvent } from '../../../src/domain/operational.js';

// Operational events are written by the transaction that records what raises them (an outbox): a batch of
// outcomes and its events commit together, so recording the same outcomes again raises nothing, and a
// 2xx that recovers a delivery raises its event on PostgreSQL too, where 2xx batches are one statement
// (a race of that statement, on PostgreSQL only: test/postgres/store/operational-outbox.test.ts).

const A = 'wrk_outbox_a';

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
  // A commit of outcomes that queued operational attempts wakes the local worker ('queued'), so they
  // go out at once rather than at its next poll; one that queued none does not.
  let wakes = 0;
  store.events.on('queued', () => wakes++);
  const wakesOf = async (record: () => Promise<unknown>) => {
    wakes = 0;
    await record();
    return wakes;
  };

  const [messageId] = await emit(1);
  for (let n = 1; n <= 3; n++) {
    const input = await claimOne(store.queue, A, endpointId);
    const items = [{ input, result: outcome(500) }];
    let owned: boolean[] = [];
    assert.equal(await wakesOf(async () => (owned = await store.queue.completeMany(items, A))), n === 3 ? 1 : 0);
    assert.deepEqual(owned, [true]);
    // Recorded again (its first commit went unanswered): its attempt exists, nothing is raised again.
    assert.equal(await wakesOf(async () => assert.deepEqual(await store.queue.completeMany(items, A), [false])), 0);
  }
  assert.deepEqual(
    (await raised()).map((m) => m.event_type),
    ['message.attempt.failing'],
    'failing once, at the third failure',
  );
  const last = await claimOne(store.queue, A, endpointId);
  assert.equal(await wakesOf(() => store.queue.completeMany([{ input: last, result: outcome(500) }], A)), 1);
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
  assert.equal(await wakesOf(async () => assert.deepEqual(await store.queue.completeMany(success, A), [true])), 1);
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
    endpoint_type: 'http',
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
    .select(['message_id', 'endpoint_id', 'status'])
    .where('endpoint_id', '=', op.id)
    .where('run_at', 'is not', null)
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

// On PostgreSQL a batch recorded in one statement stores its events (outcome_events) and its worker raises
// them right after the commit. A worker that stops in between leaves them stored: every heartbeat raises
// what is stored (Workers.raiseStoredEvents), each event once however many raise at once, a bounded
// number per call.
test('stored events that nobody raised are raised by a heartbeat, once each, a bounded number at a time', {
  timeout: 60_000,
}, async (t) => {
  const { store, emit, scope, endpointId } = await openStore(t);
  const { row: op } = await store.endpoints.createOperational(scope, { url: 'http://127.0.0.1:9/ops' });
  const db = store.ctx.db;
  await emit(1);
  const delivery = await db
    .selectFrom('deliveries')
    .select('id')
    .where('endpoint_id', '=', endpointId)
    .executeTakeFirstOrThrow();
  const at = Date.now();
  const stored = Array.from({ length: 150 }, (_, i) => ({
    id: newId('outcomeEvent', at + i),
    body: JSON.stringify({
      event: { type: 'delivery.failing', deliveryId: delivery.id, endpointId, at: at + i },
      lastAttempt: {
        attempt_number: 3,
        response_status: 500,
        error: 'HTTP 500',
        created_at: new Date(at).toISOString(),
      },
    } satisfies CausedEvent),
    created_at: at,
  }));
  await db.insertInto('outcome_events').values(stored).execute();
  const raised = () =>
    db.selectFrom('messages').select(['id', 'created_at']).where('app_id', '=', op.app_id).orderBy('id').execute();

  // Two heartbeats at once, then one per beat until none is left: at most 100 a call, each event once.
  const calls = await Promise.all([store.workers.raiseStoredEvents(), store.workers.raiseStoredEvents()]);
  for (;;) {
    const n = await store.workers.raiseStoredEvents();
    calls.push(n);
    if (n === 0) break;
  }
  assert.ok(
    calls.every((n) => n <= 100),
    `queued per call: ${calls}`,
  );
  assert.equal(
    calls.reduce((sum, n) => sum + n, 0),
    150,
  );
  assert.deepEqual(
    (await raised()).map((m) => Number(m.created_at)).sort((x, y) => x - y),
    stored.map((_, i) => at + i),
    'each raised once',
  );
  assert.deepEqual(await db.selectFrom('outcome_events').select('id').execute(), []);
});
