import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore, outcome } from '../../support/store.js';
import { claimOne } from '../../support/outbox.js';

// The operational outbox where PostgreSQL alone takes a path of its own: the one statement that records a
// batch of 2xx outcomes. (What every store shares: test/contract/store/operational-outbox.test.ts.)

const A = 'wrk_outbox_a';

// PostgreSQL records a batch of 2xx outcomes in one statement. A failure recorded at the same moment by
// another worker (here: a transaction holding the delivery and bringing it to its third failed attempt)
// makes that 2xx a recovery after the statement's snapshot was taken; the statement must still see it.
test('a 2xx recorded while another transaction brings its delivery to its third failure raises recovered', {
  timeout: 60_000,
}, async (t) => {
  const { store, emit, scope, endpointId } = await openStore(t, { HERALD_RETRY_SCHEDULE: '0s,0s,0s,0s,0s' });
  const { row: op } = await store.endpoints.createOperational(scope, { url: 'http://127.0.0.1:9/ops' });
  const db = store.ctx.db;
  const [messageId] = await emit(1);
  for (let n = 1; n <= 2; n++)
    await store.queue.completeMany([{ input: await claimOne(store.queue, A, endpointId), result: outcome(500) }], A);
  const delivery = await db
    .selectFrom('deliveries')
    .select('id')
    .where('message_id', '=', messageId!)
    .executeTakeFirstOrThrow();
  await store.deliveries.retry(scope, delivery.id);
  const claimed = await store.queue.claimLoaded(A, 10, { only: endpointId });
  const manual = claimed.find(({ task }) => task.trigger === 'manual')!;
  assert.ok(manual, 'the manual attempt is claimed');

  let recording: Promise<boolean[]> | null = null;
  await db.transaction().execute(async (trx) => {
    await trx.selectFrom('deliveries').select('id').where('id', '=', delivery.id).forUpdate().execute();
    // The 2xx's statement starts now and waits for the delivery, which this transaction holds.
    recording = store.queue.completeMany([{ input: manual.input!, result: outcome(200) }], A);
    await new Promise((resolve) => setTimeout(resolve, 500));
    await trx.updateTable('deliveries').set({ attempt_count: 3 }).where('id', '=', delivery.id).execute();
  });
  assert.deepEqual(await recording!, [true]);
  const events = await db.selectFrom('messages').select('event_type').where('app_id', '=', op.app_id).execute();
  assert.deepEqual(
    events.map((m) => m.event_type),
    ['message.attempt.recovered'],
  );
  const after = await db
    .selectFrom('deliveries')
    .select(['status', 'attempt_count'])
    .where('id', '=', delivery.id)
    .executeTakeFirstOrThrow();
  assert.deepEqual(after, { status: 'success', attempt_count: 4 });
});
