import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledQuery, sql } from 'kysely';
import { openStore } from '../../support/store.js';
import { historyRows } from '../../support/history-rows.js';
import { assertIndexReads } from '../../support/attempt-reads.js';

// An application's attempts by hour and event type: the busiest types by name and the rest summed, counted
// on each database through the indexes by endpoint and time of both places an attempt is recorded (a row of
// attempts, a delivery's first attempt), with statistics that make reading either table whole look cheap to
// neither planner: many attempts of other endpoints.

test("an application's attempts by hour and event type: the top ones by name, the rest summed, through the index", async (t) => {
  const { store, scope, appId, endpointId } = await openStore(t);
  const second = (await store.endpoints.create(scope, { appId, url: 'http://127.0.0.1:9/second' })).row.id;
  const hour = 3_600_000;
  const start = Math.floor(Date.now() / hour) * hour - 2 * hour;
  // Event type → attempts [hour offset, endpoint, failed]: "busy" 4 in hour 0 and 2 in hour 1, "mid" 3,
  // "low" 2, "rare" 1; with top 2, "low" and "rare" are summed.
  const plan: [type: string, offset: number, endpoint: string, failed: boolean][] = [
    ...Array.from({ length: 4 }, (_, i) => ['busy', 0, i % 2 ? endpointId : second, i === 0] as const),
    ['busy', 1, endpointId, false],
    ['busy', 1, second, false],
    ['mid', 0, endpointId, true],
    ['mid', 1, endpointId, false],
    ['mid', 1, second, true],
    ['low', 1, endpointId, false],
    ['low', 0, second, false],
    ['rare', 1, endpointId, true],
  ].map((entry) => [...entry] as [string, number, string, boolean]);
  let n = 0;
  const id = (prefix: string) => `${prefix}_${String(++n).padStart(26, '0')}`;
  for (const [eventType, offset, endpoint, failed] of plan) {
    const at = start + offset * hour + n * 1000;
    const { message, delivery, attempt } = historyRows({
      orgId: scope.orgId,
      appId,
      endpointId: endpoint,
      messageId: id('evt'),
      deliveryId: id('dlv'),
      attemptId: id('attempt'),
      eventType,
      failed,
      at,
    });
    await store.ctx.db.insertInto('messages').values(message).execute();
    await store.ctx.db.insertInto('deliveries').values(delivery).execute();
    if (attempt) await store.ctx.db.insertInto('attempts').values(attempt).execute();
  }
  // Other applications' messages, deliveries and attempts, in the same hours: not counted, and they make
  // reading any of the three tables whole costly.
  // Half of them failed, at every endpoint: both places an attempt is recorded hold thousands of other
  // endpoints' attempts.
  const others = Array.from({ length: 8000 }, (_, i) =>
    historyRows({
      orgId: scope.orgId,
      appId: `app_other${i % 100}`,
      endpointId: `ep_other${i % 100}`,
      messageId: `evt_other${i}`,
      deliveryId: `dlv_other${i}`,
      attemptId: `attempt_other${i}`,
      eventType: `other.type${i % 7}`,
      failed: i % 4 < 2,
      at: start + (i % 3) * hour,
    }),
  );
  for (let i = 0; i < others.length; i += 400) {
    const batch = others.slice(i, i + 400);
    await store.ctx.db
      .insertInto('messages')
      .values(batch.map((other) => other.message))
      .execute();
    await store.ctx.db
      .insertInto('deliveries')
      .values(batch.map((other) => other.delivery))
      .execute();
    await store.ctx.db
      .insertInto('attempts')
      .values(batch.flatMap((other) => (other.attempt ? [other.attempt] : [])))
      .execute();
  }
  await sql`analyze`.execute(store.ctx.db);

  const rows = await store.applicationStats.attemptsByHourAndType(appId, start, start + 3 * hour, 2);
  const sorted = [...rows].sort((a, b) => a.start - b.start || String(a.eventType).localeCompare(String(b.eventType)));
  assert.deepEqual(sorted, [
    { start, eventType: 'busy', success: 3, failure: 1 },
    { start, eventType: 'mid', success: 0, failure: 1 },
    { start, eventType: null, success: 1, failure: 0 },
    { start: start + hour, eventType: 'busy', success: 2, failure: 0 },
    { start: start + hour, eventType: 'mid', success: 1, failure: 1 },
    { start: start + hour, eventType: null, success: 1, failure: 1 },
  ]);
  // With room for every type, each is named; the window's bounds hold (hour 1 only).
  const all = await store.applicationStats.attemptsByHourAndType(appId, start + hour, start + 2 * hour, 20);
  assert.deepEqual(
    [...all].sort((a, b) => String(a.eventType).localeCompare(String(b.eventType))),
    [
      { start: start + hour, eventType: 'busy', success: 2, failure: 0 },
      { start: start + hour, eventType: 'low', success: 1, failure: 0 },
      { start: start + hour, eventType: 'mid', success: 1, failure: 1 },
      { start: start + hour, eventType: 'rare', success: 0, failure: 1 },
    ],
  );

  const { sql: text, parameters } = store.applicationStats
    .attemptsByHourAndTypeQuery([endpointId, second], start, start + 3 * hour, 20)
    .compile();
  const explain = store.dialect === 'postgres' ? 'explain (format json)' : 'explain query plan';
  const read = JSON.stringify(
    (await store.ctx.db.executeQuery(CompiledQuery.raw(`${explain} ${text}`, [...parameters]))).rows,
  );
  assertIndexReads(read);
});
