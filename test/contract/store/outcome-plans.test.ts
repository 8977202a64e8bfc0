import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { PARKED_AT } from '../../../src/domain/fifo.js';
import { newId } from '../../../src/domain/ids.js';
import {
  attemptRow,
  type DeliveryState,
  deliveriesToRead,
  endpointsToRead,
  type OutcomeEvent,
  type OutcomeItem,
  outcomePlan,
  placeAttempts,
  recordingPlan,
} from '../../../src/domain/outcome-plan.js';
import { EMPTY_QUEUE, pick, type WaitingAttempt } from '../../../src/domain/queue-slot.js';
import { enqueueManual, stopEndpoints } from '../../../src/store/queue/book.js';
import { openQueue, type AttemptInput, type AttemptResult } from '../../../src/store/queue/index.js';
import { PostgresQueue } from '../../../src/store/queue/postgres.js';
import { outcomeEventSink, raisePolicy } from '../../../src/store/operational.js';
import type { DeliveryRow, EndpointRow, NewDeliveryRow } from '../../../src/store/schema.js';
import { openStore } from '../../support/store.js';

// Random batches of outcomes, recorded by the queue of the store under test, leave exactly the rows the
// planner (src/domain/outcome-plan.ts) says: its plan is made here from the rows as they were before the
// batch, applied to them in memory, and compared with the rows after. Batches mix 2xx and failures (with
// and without Retry-After, a 410, no answer), scheduled and manual attempts, deliveries with earlier
// failures and attempts waiting behind the head (manual, scheduled, parked on a FIFO endpoint), and what
// can change between a claim and its outcome: the lease lost to another worker, a manual attempt queued
// meanwhile, the outcome recorded already, the endpoint disabled. Beside the batch, each endpoint has a
// delivery waiting for a later attempt, one whose head another worker holds and one with nothing queued:
// what a hold moves (or must not), and what a disabling stops (or must leave alone). On PostgreSQL this
// covers both ways a batch is written (one checked statement, or the transaction that reads first, when
// what the claim read no longer holds).

const A = 'wrk_prop_a';
const B = 'wrk_prop_b';
const SCHEDULE = '0s,0s,0s,0s';
const SCHEDULE_LENGTH = 4;

type Twist = 'none' | 'lease-lost' | 'retried' | 'recorded' | 'endpoint-disabled';
/** What waits behind the head: nothing, a manual attempt, or a scheduled one a manual head jumped (due later, or parked). */
type Behind = 'none' | 'manual' | 'scheduled' | 'parked';
interface Case {
  endpoint: 0 | 1 | 2;
  failures: number;
  trigger: 'scheduled' | 'manual';
  behind: Behind;
  status: number | null;
  retryAfterMs: number | null;
  twist: Twist;
}

const caseArb: fc.Arbitrary<Case> = fc
  .record({
    endpoint: fc.constantFrom(0 as const, 1 as const, 2 as const),
    failures: fc.integer({ min: 0, max: SCHEDULE_LENGTH - 1 }),
    trigger: fc.constantFrom('scheduled' as const, 'manual' as const),
    behind: fc.constantFrom<Behind>('none', 'manual', 'scheduled', 'parked'),
    status: fc.constantFrom(200, 204, 500, 503, 429, 410, null),
    retryAfterMs: fc.constantFrom(null, 2_000),
    twist: fc.oneof(
      { weight: 4, arbitrary: fc.constant('none' as const) },
      { weight: 1, arbitrary: fc.constantFrom('lease-lost' as const, 'retried' as const, 'recorded' as const) },
      { weight: 1, arbitrary: fc.constant('endpoint-disabled' as const) },
    ),
  })
  // A scheduled attempt waits behind a manual head only: the schedule has one attempt queued at a time.
  .map((c) => (c.trigger === 'scheduled' && c.behind !== 'none' ? { ...c, behind: 'manual' as const } : c));

/** A case with nothing out of the ordinary: a first scheduled attempt and nothing changed meanwhile. */
const QUIET: Case = {
  endpoint: 0,
  failures: 0,
  trigger: 'scheduled',
  behind: 'none',
  status: 200,
  retryAfterMs: null,
  twist: 'none',
};

interface Rows {
  attempts: Map<string, Record<string, unknown>>;
  deliveries: Map<string, DeliveryRow>;
  endpoints: Map<string, EndpointRow>;
}

test('random outcome batches leave the rows the planner says', { timeout: 240_000 }, async (t) => {
  const { store, scope, appId, endpointId, config } = await openStore(t, { HERALD_RETRY_SCHEDULE: SCHEDULE });
  const db = store.ctx.db;
  // The failing endpoint is FIFO: a parked attempt behind a head stays parked there, elsewhere it is due.
  const failingId = (
    await store.endpoints.create(scope, { appId, url: 'http://127.0.0.1:9/failing', ordering: 'fifo' })
  ).row.id;
  const disabledId = (await store.endpoints.create(scope, { appId, url: 'http://127.0.0.1:9/disabled' })).row.id;
  const endpointIds = [endpointId, failingId, disabledId];
  // Subscribed to every operational event: what each batch raises is compared with the planner's events.
  const { row: ops } = await store.endpoints.createOperational(scope, { url: 'http://127.0.0.1:9/ops' });
  let clock = Date.now();
  // The queue under test, with a clock of the test's: the plan made here uses the same `now`.
  const events = outcomeEventSink(store.ctx.db, raisePolicy(store.dialect, config.retryScheduleMs));
  const queue = openQueue(
    { ...store.ctx, now: () => clock },
    { endpoints: store.endpoints, events },
    config,
    () => {},
    store.pool,
  );
  const policy = { retryScheduleMs: config.retryScheduleMs, disableAfterMs: config.disableAfterMs };

  const read = async (): Promise<Rows> => ({
    attempts: new Map(
      (await db.selectFrom('attempts').selectAll().execute()).map((row) => [
        row.id,
        { ...row, created_at: Number(row.created_at) },
      ]),
    ),
    deliveries: new Map(
      (await db.selectFrom('deliveries').selectAll().where('endpoint_id', '<>', ops.id).execute()).map((row) => [
        row.id,
        row,
      ]),
    ),
    endpoints: new Map((await db.selectFrom('endpoints').selectAll().execute()).map((row) => [row.id, row])),
  });
  /** The operational events raised, as `type subject` (the delivery's id, or the endpoint's). */
  const raised = async () =>
    (
      await db
        .selectFrom('messages')
        .innerJoin('payloads', 'payloads.message_id', 'messages.id')
        .select(['messages.event_type', 'payloads.body'])
        .where('messages.app_id', '=', ops.app_id)
        .execute()
    )
      .map(({ event_type, body }) => {
        const data = JSON.parse(body) as { delivery_id?: string; endpoint_id: string };
        return `${event_type} ${data.delivery_id ?? data.endpoint_id}`;
      })
      .sort();

  let withEvents = 0;
  let withDisabling = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(caseArb, { minLength: 1, maxLength: 6 }), async (cases) => {
      clock += 10_000;
      const now = clock;
      await db.deleteFrom('attempts').execute();
      await db.deleteFrom('deliveries').execute();
      await db.deleteFrom('payloads').execute();
      await db.deleteFrom('messages').execute();
      await db
        .updateTable('endpoints')
        .set({ status: 'active', failing_since: null, exhausted_at: null, updated_at: now })
        .execute();
      await db
        .updateTable('endpoints')
        .set({ status: 'failing', failing_since: now - 3_600_000 })
        .where('id', '=', failingId)
        .execute();
      await db.updateTable('endpoints').set({ status: 'disabled' }).where('id', '=', disabledId).execute();
      const messageId = newId('message', now);
      await db
        .insertInto('messages')
        .values({
          id: messageId,
          org_id: scope.orgId,
          livemode: 0,
          app_id: appId,
          event_type: 'invoice.paid',
          created_at: now,
        })
        .execute();

      // The deliveries as the cases describe them, each with its head due now, then claimed by A.
      const row = (id: string, endpoint: string, over: Partial<NewDeliveryRow>): NewDeliveryRow => ({
        id,
        org_id: scope.orgId,
        livemode: 0,
        app_id: appId,
        message_id: messageId,
        endpoint_id: endpoint,
        status: 'pending',
        attempt_count: 0,
        attempt_seq: 1,
        schedule_step: 0,
        created_at: now,
        updated_at: now,
        ...EMPTY_QUEUE,
        ...over,
      });
      const deliveryIds: string[] = [];
      for (const c of cases) {
        const id = newId('delivery', now);
        deliveryIds.push(id);
        const number = c.failures + 1;
        const behind: WaitingAttempt[] =
          c.behind === 'none'
            ? []
            : [
                {
                  number: number + 1,
                  trigger: c.behind === 'manual' ? 'manual' : 'scheduled',
                  runAt: c.behind === 'manual' ? null : c.behind === 'parked' ? PARKED_AT : now + 60_000,
                },
              ];
        await db
          .insertInto('deliveries')
          .values(
            row(id, endpointIds[c.endpoint]!, {
              attempt_count: c.failures,
              attempt_seq: number + behind.length,
              schedule_step: c.trigger === 'scheduled' ? c.failures : Math.min(c.failures + 1, SCHEDULE_LENGTH),
              run_at: now - 1_000,
              next_trigger: c.trigger,
              next_attempt: number,
              queued_after: behind.length === 0 ? null : JSON.stringify(behind),
            }),
          )
          .execute();
      }
      // Per endpoint, outside the batch: a delivery waiting for a later attempt (what a hold moves and a
      // disabling stops), one whose head another worker holds (a hold leaves it, a disabling stops it) and
      // one with nothing queued (a disabling leaves it).
      for (const endpoint of endpointIds) {
        const later = { attempt_count: 1, attempt_seq: 2, schedule_step: 1, next_trigger: 'scheduled' as const };
        await db
          .insertInto('deliveries')
          .values([
            row(newId('delivery', now), endpoint, { ...later, run_at: now + 1_000, next_attempt: 2 }),
            row(newId('delivery', now), endpoint, {
              ...later,
              run_at: now - 1_000,
              next_attempt: 2,
              lease_owner: B,
              lease_until: now + 60_000,
            }),
            row(newId('delivery', now), endpoint, { status: 'failed', attempt_count: 1, schedule_step: 1 }),
          ])
          .execute();
      }
      const claimed = await queue.claimLoaded(A, 100);
      assert.equal(claimed.length, cases.length, 'every case claimed');
      const byDelivery = new Map(claimed.map((c) => [c.task.delivery_id, c.input!]));
      const items: OutcomeItem[] & { input: AttemptInput; result: AttemptResult }[] = cases.map((c, i) => {
        const input = byDelivery.get(deliveryIds[i]!)!;
        const ok = c.status !== null && c.status >= 200 && c.status < 300;
        return {
          input,
          result: {
            ok,
            responseStatus: c.status,
            responseBody: c.status === null ? null : `answer ${c.status}`,
            error: ok ? null : c.status === null ? 'connection refused' : `HTTP ${c.status}`,
            durationMs: 3,
            retryAfterMs: c.status === 429 || c.status === 503 ? c.retryAfterMs : null,
            at: now + 100 + i,
          },
        };
      });

      // What changes between the claims and the outcomes.
      for (const [i, c] of cases.entries()) {
        const { task } = items[i]!.input;
        if (c.twist === 'lease-lost')
          await db
            .updateTable('deliveries')
            .set({ lease_owner: B, lease_until: task.leaseUntil + 5 })
            .where('id', '=', task.delivery_id)
            .execute();
        if (c.twist === 'retried')
          await db.transaction().execute((trx) => enqueueManual(trx, store.dialect, [task.delivery_id], now + 1));
        // Recorded where a first recording puts it: a first attempt that delivered on its delivery row.
        if (c.twist === 'recorded') {
          const attempt = attemptRow(task, items[i]!.result, A);
          if (attempt.status === 'success' && attempt.attempt_number === 1 && attempt.trigger === 'scheduled')
            await db
              .updateTable('deliveries')
              .set({
                first_attempt_id: attempt.id,
                first_attempt_at: attempt.created_at,
                first_duration_ms: attempt.duration_ms,
                first_response_status: attempt.response_status,
                first_response_body: attempt.response_body,
              })
              .where('id', '=', task.delivery_id)
              .execute();
          else await db.insertInto('attempts').values(attempt).execute();
        }
        if (c.twist === 'endpoint-disabled')
          await db.transaction().execute(async (trx) => {
            await trx.updateTable('endpoints').set({ status: 'disabled' }).where('id', '=', task.endpoint_id).execute();
            await stopEndpoints(trx, [task.endpoint_id], 'disabled', now + 2);
          });
      }

      clock = now + 500;
      const before = await read();
      const expected = applyPlan(before, items, policy, clock);
      const ways = queue instanceof PostgresQueue ? { ...queue.batches } : null;
      const owned = await queue.completeMany(items, A);
      const after = await read();
      // Ours unless another worker took the lease, or a disabling of its endpoint emptied its queue.
      assert.deepEqual(
        expected.owned,
        cases.map(
          (c) =>
            c.twist !== 'lease-lost' &&
            !cases.some((other) => other.twist === 'endpoint-disabled' && other.endpoint === c.endpoint),
        ),
        'owned, as the planner says',
      );
      assert.deepEqual(owned, expected.owned, 'owned');
      assert.deepEqual(sortedAttempts(after), sortedAttempts(expected.rows), 'attempts');
      assert.deepEqual(after.deliveries, expected.rows.deliveries, 'deliveries');
      assert.deepEqual(healthOf(after), healthOf(expected.rows), 'endpoints');
      assert.deepEqual(
        await raised(),
        expected.events
          .map((e) =>
            e.type === 'endpoint.disabled'
              ? `endpoint.disabled ${e.endpointId}`
              : `message.attempt.${e.type.slice('delivery.'.length)} ${e.deliveryId}`,
          )
          .sort(),
        'operational events',
      );
      // On PostgreSQL a batch that nothing changed since its claims is one statement, events, holds and
      // disabling included.
      if (ways && queue instanceof PostgresQueue) {
        const way = [queue.batches.oneStatement - ways.oneStatement, queue.batches.transaction - ways.transaction];
        if (cases.every((c) => c.twist === 'none')) {
          assert.deepEqual(way, [1, 0], 'one statement');
          if (expected.events.length > 0) withEvents++;
          if (expected.events.some((e) => e.type === 'endpoint.disabled')) withDisabling++;
        }
      }
    }),
    {
      numRuns: 40,
      // A batch nothing changed under that disables an endpoint (a 410) beside a hold (a 429 with
      // Retry-After) of another and a third failure of a third: every kind of write at once.
      examples: [
        [
          [
            { ...QUIET, endpoint: 0, status: 410 },
            { ...QUIET, endpoint: 1, status: 429, retryAfterMs: 2_000 },
            { ...QUIET, endpoint: 2, failures: 2, status: 500 },
            { ...QUIET, endpoint: 1, status: 200 },
          ],
        ],
      ],
    },
  );
  // On PostgreSQL both ways a batch is written were taken: the one checked statement (nothing changed
  // since the claims) and the transaction (a twist).
  if (queue instanceof PostgresQueue) {
    assert.ok(queue.batches.oneStatement > 0, JSON.stringify(queue.batches));
    assert.ok(queue.batches.transaction > 0, JSON.stringify(queue.batches));
    assert.ok(withEvents > 0, 'some batches with events were one statement');
    assert.ok(withDisabling > 0, 'some batches that disabled an endpoint were one statement');
  }
});

/** The rows after the planner's plan for `items`, made from `before` as the store's transaction makes it. */
function applyPlan(
  before: Rows,
  items: { input: AttemptInput; result: AttemptResult }[],
  policy: { retryScheduleMs: number[]; disableAfterMs: number },
  now: number,
): { owned: boolean[]; rows: Rows; events: OutcomeEvent[] } {
  const rows: Rows = {
    attempts: new Map(before.attempts),
    deliveries: new Map([...before.deliveries].map(([id, d]) => [id, { ...d }])),
    endpoints: new Map([...before.endpoints].map(([id, e]) => [id, { ...e }])),
  };
  const { attempts, pauses } = recordingPlan(items, A);
  // A pause holds back the endpoint's queued attempts no worker holds.
  for (const { endpointId, until } of pauses)
    for (const d of rows.deliveries.values())
      if (
        d.endpoint_id === endpointId &&
        d.run_at !== null &&
        d.run_at < until &&
        (d.lease_owner === null || d.lease_until! <= now)
      )
        d.run_at = until;
  const deliveries = new Map<string, DeliveryState>(
    deliveriesToRead(items).flatMap((id) => {
      const d = rows.deliveries.get(id);
      if (!d) return [];
      const { status, schedule_step, attempt_seq, attempt_count, first_attempt_id } = d;
      return [[id, { status, schedule_step, attempt_seq, attempt_count, first_attempt_id, ...pick(d) }] as const];
    }),
  );
  // A first attempt that delivered goes on its delivery row; the others are rows, written if new.
  const placement = placeAttempts(items, attempts, A, deliveries);
  const written = new Set(placement.rows.filter((a) => !rows.attempts.has(a.id)).map((a) => a.id));
  for (const a of placement.rows) if (written.has(a.id)) rows.attempts.set(a.id, { ...a });
  const inline = new Set(placement.inline.map((a) => a.id));
  for (const a of inline) written.add(a);
  const endpoints = new Map(
    endpointsToRead(items).flatMap((id) => {
      const e = rows.endpoints.get(id);
      return e ? [[id, { status: e.status, failingSince: e.failing_since, exhaustedAt: e.exhausted_at }] as const] : [];
    }),
  );
  const plan = outcomePlan(items, A, { written, inline, deliveries, endpoints }, { ...policy, now });
  for (const change of plan.deliveries) {
    const d = rows.deliveries.get(change.id)!;
    d.attempt_count += change.attemptsAdded;
    if (change.status !== undefined) d.status = change.status;
    if (change.schedule_step !== undefined) d.schedule_step = change.schedule_step;
    if (change.attempt_seq !== undefined) d.attempt_seq = change.attempt_seq;
    if (change.queue !== undefined) Object.assign(d, change.queue);
    if (change.first !== undefined)
      Object.assign(d, {
        first_attempt_id: change.first.id,
        first_attempt_at: change.first.created_at,
        first_duration_ms: change.first.duration_ms,
        first_response_status: change.first.response_status,
        first_response_body: change.first.response_body,
        first_request_headers: change.first.request_headers,
        first_response_headers: change.first.response_headers,
      });
    d.updated_at = change.updated_at;
  }
  if (plan.healthy)
    for (const id of plan.healthy.ids) {
      const e = rows.endpoints.get(id)!;
      if (e.status === 'disabled' || (e.status === 'active' && e.failing_since === null && e.exhausted_at === null))
        continue;
      Object.assign(e, { status: 'active', failing_since: null, exhausted_at: null, updated_at: plan.healthy.at });
    }
  for (const { id, health, at } of plan.health) {
    const e = rows.endpoints.get(id)!;
    if (e.status !== 'disabled')
      Object.assign(e, {
        status: health.status,
        failing_since: health.failingSince,
        exhausted_at: health.exhaustedAt,
        updated_at: at,
      });
    // A disabled endpoint's deliveries stop: those pending or with an attempt queued, whoever holds it.
    if (health.status === 'disabled')
      for (const d of rows.deliveries.values())
        if (d.endpoint_id === id && (d.status === 'pending' || d.run_at !== null || d.queued_after !== null))
          Object.assign(d, EMPTY_QUEUE, { status: d.status === 'pending' ? 'disabled' : d.status, updated_at: at });
  }
  return { owned: plan.owned, rows, events: plan.events };
}

const sortedAttempts = (rows: Rows) =>
  [...rows.attempts.values()].sort((a, b) => (String(a.id) < String(b.id) ? -1 : 1));

const healthOf = (rows: Rows) =>
  [...rows.endpoints.values()]
    .map((e) => ({
      id: e.id,
      status: e.status,
      failing_since: e.failing_since,
      exhausted_at: e.exhausted_at,
      updated_at: e.updated_at,
    }))
    .sort((a, b) => (a.id < b.id ? -1 : 1));
