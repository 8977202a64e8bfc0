import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { sql } from 'kysely';
import type { AttemptResult } from '../../../src/store/queue/index.js';
import type { Store } from '../../../src/store/index.js';
import { eventually } from '../../support/receiver.js';
import { openStore } from '../../support/store.js';
import { EMPTY_QUEUE, pick, waitingOf } from '../../../src/domain/queue-slot.js';

// Two workers (or two completion lanes) can record failures of one endpoint at the same time. Endpoint
// health is read, changed and written back, so without taking turns on the endpoint's row the second
// writes back what it read and undoes the first's change: here the exhaustion of a delivery, which the
// disabling rule (HERALD_DISABLE_AFTER) needs.

/** Sessions of the test database waiting for a lock. */
async function waitingOnLocks(store: Store): Promise<number> {
  const { rows } = await sql<{
    n: string;
  }>`select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`.execute(
    store.ctx.db,
  );
  return Number(rows[0]!.n);
}

/** A session of its own on the test database, in a transaction, ended before the database is dropped. */
/** A delivery's row as it is now. */
function deliveryRow(store: Store, id: string) {
  return store.ctx.db.selectFrom('deliveries').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

async function sessionInTransaction(url: string, closeFirst: (close: () => Promise<void>) => void): Promise<pg.Client> {
  const session = new pg.Client({ connectionString: url });
  await session.connect();
  closeFirst(() => session.end());
  await session.query('begin');
  return session;
}

/** The store's endpoint made `failing` (an outcome writes to its row), and its one emitted attempt claimed. */
async function claimedOfFailingEndpoint(store: Store, endpointId: string) {
  await store.ctx.db
    .updateTable('endpoints')
    .set({ status: 'failing', failing_since: Date.now() - 1_000 })
    .where('id', '=', endpointId)
    .execute();
  const [claimed] = await store.queue.claimLoaded('wrk_health', 10);
  assert.ok(claimed?.input);
  return { task: claimed.task, input: claimed.input };
}

const failure = (at: number): AttemptResult => ({
  ok: false,
  responseStatus: 500,
  responseBody: 'no',
  error: 'HTTP 500',
  durationMs: 1,
  retryAfterMs: null,
  at,
});

test("two failures of one endpoint recorded at once: the second keeps the first's exhausted delivery", {
  timeout: 60_000,
}, async (t) => {
  const { store, emit, endpointId, config, closeFirst } = await openStore(t, { HERALD_RETRY_SCHEDULE: '0s,1h' });
  await emit(2);
  const [exhausting, retried] = await store.queue.claimLoaded('wrk_health', 10);
  assert.ok(exhausting?.input && retried?.input);
  // The first delivery is on its last scheduled attempt: its failure exhausts it. The second has a retry left.
  await store.ctx.db
    .updateTable('deliveries')
    .set({ schedule_step: 1 })
    .where('id', '=', exhausting.task.delivery_id)
    .execute();

  // A third session holds the endpoint's row, so both recordings queue up behind it, the exhausting one first.
  const holder = await sessionInTransaction(config.databaseUrl!, closeFirst);
  await holder.query('select id from endpoints where id = $1 for update', [endpointId]);

  const at = Date.now();
  const first = store.queue.completeMany([{ input: exhausting.input, result: failure(at) }], 'wrk_health');
  await eventually(async () => (await waitingOnLocks(store)) === 1, 10_000, 'the first recording waits for the row');
  const second = store.queue.completeMany([{ input: retried.input, result: failure(at + 1) }], 'wrk_health');
  await eventually(async () => (await waitingOnLocks(store)) === 2, 10_000, 'the second recording waits too');
  await holder.query('commit');
  assert.deepEqual(await Promise.all([first, second]), [[true], [true]]);

  const endpoint = await store.ctx.db
    .selectFrom('endpoints')
    .select(['status', 'failing_since', 'exhausted_at'])
    .where('id', '=', endpointId)
    .executeTakeFirstOrThrow();
  assert.equal(endpoint.status, 'failing');
  // Whichever was written first began the run (each waits for the row, and one that finds it changed
  // since its claim is written again after reading it, behind the other).
  assert.ok([at, at + 1].includes(Number(endpoint.failing_since)), 'the run of failures began with one of them');
  assert.equal(Number(endpoint.exhausted_at), at, "the first failure's exhausted delivery is still on record");
  const statuses = await store.ctx.db.selectFrom('deliveries').select(['id', 'status']).execute();
  assert.deepEqual(Object.fromEntries(statuses.map((d) => [d.id, d.status])), {
    [exhausting.task.delivery_id]: 'failed',
    [retried.task.delivery_id]: 'pending',
  });
});

test('a failure recorded while the endpoint is being disabled: both complete, neither deadlocks', {
  timeout: 60_000,
}, async (t) => {
  const { store, emit, endpointId, scope, config, closeFirst } = await openStore(t, {
    HERALD_RETRY_SCHEDULE: '0s,1h,2h',
  });
  await emit(1);
  // Already failing, so the failure changes nothing in its health: the endpoint row is still taken.
  const claimed = await claimedOfFailingEndpoint(store, endpointId);

  // A third session holds the delivery's row, so the recording stops there, holding whatever it took before.
  const holder = await sessionInTransaction(config.databaseUrl!, closeFirst);
  await holder.query('select id from deliveries where id = $1 for update', [claimed.task.delivery_id]);
  const recording = store.queue.completeMany([{ input: claimed.input, result: failure(Date.now()) }], 'wrk_health');
  await eventually(async () => (await waitingOnLocks(store)) === 1, 10_000, 'the recording waits for the delivery');
  // The API disables the endpoint meanwhile: its row, then its tasks, then its deliveries.
  const disabling = store.endpoints.update(scope, endpointId, { status: 'disabled' });
  await eventually(async () => (await waitingOnLocks(store)) === 2, 10_000, 'the update waits too');
  await holder.query('commit');
  assert.deepEqual(await recording, [true]);
  assert.ok(await disabling, 'the update went through');

  const endpoint = await store.ctx.db
    .selectFrom('endpoints')
    .select('status')
    .where('id', '=', endpointId)
    .executeTakeFirstOrThrow();
  assert.equal(endpoint.status, 'disabled');
  const delivery = await store.ctx.db
    .selectFrom('deliveries')
    .select(['status', 'attempt_count'])
    .executeTakeFirstOrThrow();
  assert.deepEqual(
    delivery,
    { status: 'disabled', attempt_count: 1 },
    'the failure counted, then the delivery stopped with its endpoint',
  );
  assert.deepEqual(
    pick(await store.ctx.db.selectFrom('deliveries').selectAll().executeTakeFirstOrThrow()),
    EMPTY_QUEUE,
    'its next attempt went with the disabling',
  );
});

test('a success recorded while its failing endpoint is being disabled: both complete, neither deadlocks', {
  timeout: 60_000,
}, async (t) => {
  const { store, emit, endpointId, config, closeFirst } = await openStore(t);
  await emit(1);
  // Failing, so the success would mark it healthy: a write to its row.
  const claimed = await claimedOfFailingEndpoint(store, endpointId);

  // The API's order, by hand: the endpoint's row, then (once the recording has started) its deliveries'
  // queues, as stopEndpoints empties them.
  const api = await sessionInTransaction(config.databaseUrl!, closeFirst);
  await api.query("update endpoints set status = 'disabled' where id = $1", [endpointId]);
  const ok: AttemptResult = {
    ok: true,
    responseStatus: 200,
    responseBody: 'ok',
    error: null,
    durationMs: 1,
    retryAfterMs: null,
    at: Date.now(),
  };
  const recording = store.queue.completeMany([{ input: claimed.input, result: ok }], 'wrk_health');
  await eventually(async () => (await waitingOnLocks(store)) === 1, 10_000, 'the recording waits for the endpoint');
  await api.query(`update deliveries set ${STOPPED} where endpoint_id = $1`, [endpointId]);
  await api.query('commit');
  assert.deepEqual(await recording, [false], 'its lease went with the disabling');

  const delivery = await store.ctx.db
    .selectFrom('deliveries')
    .select(['status', 'attempt_count'])
    .executeTakeFirstOrThrow();
  assert.deepEqual(delivery, { status: 'success', attempt_count: 1 }, 'delivered all the same');
  const endpoint = await store.ctx.db
    .selectFrom('endpoints')
    .select('status')
    .where('id', '=', endpointId)
    .executeTakeFirstOrThrow();
  assert.equal(endpoint.status, 'disabled', 'the success did not undo the disabling');
});

/** What stopEndpoints (src/store/queue/book.ts) writes to a delivery: its queue empty, `disabled` if pending. */
const STOPPED = `status = case when status = 'pending' then 'disabled' else status end,
  run_at = null, next_trigger = null, next_attempt = null, lease_owner = null, lease_until = null, queued_after = null`;

/** A delivery whose first attempt failed, its next scheduled attempt waiting an hour. */
async function failedOnceWithRetryWaiting(t: TestContext) {
  const opened = await openStore(t, { HERALD_RETRY_SCHEDULE: '0s,1h' });
  await opened.emit(1);
  const [first] = await opened.store.queue.claimLoaded('wrk_retry', 10);
  assert.ok(first?.input);
  await opened.store.queue.completeMany([{ input: first.input, result: failure(Date.now()) }], 'wrk_retry');
  return { ...opened, deliveryId: first.task.delivery_id };
}

test('a manual retry while an outcome holding the delivery drops its waiting scheduled attempt: both complete, neither deadlocks', {
  timeout: 60_000,
}, async (t) => {
  const { store, scope, config, closeFirst, deliveryId } = await failedOnceWithRetryWaiting(t);

  // A third session plays the outcome: it holds the delivery (as counting an attempt does), then drops the
  // delivery's scheduled attempt still waiting (as stopping a 410's endpoint does).
  const outcome = await sessionInTransaction(config.databaseUrl!, closeFirst);
  await outcome.query('update deliveries set updated_at = updated_at where id = $1', [deliveryId]);
  const retried = store.deliveries.retry(scope, deliveryId);
  await eventually(async () => (await waitingOnLocks(store)) === 1, 10_000, 'the retry waits for the delivery');
  // Waiting on the retry here, while the retry waits on this session, would be a deadlock (one of the two
  // aborted by PostgreSQL after a second).
  const dropped = await outcome.query(`update deliveries set ${STOPPED} where id = $1 and next_trigger = 'scheduled'`, [
    deliveryId,
  ]);
  assert.equal(dropped.rowCount, 1);
  await outcome.query('commit');
  // Numbered after every attempt made or queued: the dropped scheduled attempt's number is free again.
  assert.equal(await retried, 2, 'numbered after the one attempt made');
  const delivery = await deliveryRow(store, deliveryId);
  assert.deepEqual(
    [delivery.status, delivery.next_trigger, delivery.next_attempt, delivery.queued_after, delivery.lease_owner],
    ['pending', 'manual', 2, null, null],
    'the retry, read after the drop, is all that is queued',
  );
});

test("a manual retry and the held head's failure recorded at once: in either order, the retry goes next and the schedule after it", {
  timeout: 60_000,
}, async (t) => {
  for (const first of ['outcome', 'retry'] as const) {
    // The retry schedule's next attempt is due at once: the manual one goes first all the same.
    const { store, emit, scope, config, closeFirst } = await openStore(t, { HERALD_RETRY_SCHEDULE: '0s,0s' });
    await emit(1);
    const [claimed] = await store.queue.claimLoaded('wrk_race', 10);
    assert.ok(claimed?.input);
    const deliveryId = claimed.task.delivery_id;
    // A third session holds the delivery's row, so both queue up behind it in the order started.
    const holder = await sessionInTransaction(config.databaseUrl!, closeFirst);
    await holder.query('update deliveries set updated_at = updated_at where id = $1', [deliveryId]);
    const record = () => store.queue.completeMany([{ input: claimed.input!, result: failure(Date.now()) }], 'wrk_race');
    const retry = () => store.deliveries.retry(scope, deliveryId);
    const waiting = (n: number, what: string) =>
      eventually(async () => (await waitingOnLocks(store)) === n, 10_000, `${what} waits for the delivery`);
    let recorded: Promise<boolean[]>;
    let retried: Promise<number | undefined>;
    if (first === 'outcome') {
      recorded = record();
      await waiting(1, 'the recording');
      retried = retry();
    } else {
      retried = retry();
      await waiting(1, 'the retry');
      recorded = record();
    }
    await waiting(2, 'the other');
    await holder.query('commit');
    assert.deepEqual(await recorded, [true], `${first} first: the failure was the worker's`);
    assert.equal(await retried, 2, `${first} first: the retry is the next attempt`);
    const delivery = await deliveryRow(store, deliveryId);
    assert.deepEqual(
      [delivery.status, delivery.attempt_count, delivery.attempt_seq, delivery.next_trigger, delivery.next_attempt],
      ['pending', 1, 3, 'manual', 2],
      `${first} first: the manual attempt is the head`,
    );
    assert.deepEqual(
      waitingOf(pick(delivery)).map((w) => [w.trigger, w.number]),
      [['scheduled', 3]],
      `${first} first: the next scheduled attempt waits behind it`,
    );
  }
});
