import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledQuery, type Kysely, sql } from 'kysely';
import { spawn } from 'node:child_process';
import { openStore, outcome } from '../../support/store.js';
import { createTestDatabase } from '../../support/service.js';
import { BASE_ENV } from '../../support/child.js';
import { SERVICE_COMMAND } from '../../support/paths.js';
import { randomUUID } from 'node:crypto';
import { type IdKind, idFrom } from '../../../src/domain/ids.js';
import {
  boundaryAfter,
  legacyEnd,
  legacyName,
  defaultName,
  PARTITIONED,
  partitionName,
} from '../../../src/domain/partitions.js';
import { defaultRows, dropExpired, makeAhead, REVIVALS_LOCK } from '../../../src/store/partitions/postgres.js';
import { beforeRevival } from '../../../src/store/partitions/index.js';
import { purgeExpired } from '../../../src/store/retention.js';
import { partitionsOf } from '../../../src/store/partitions/catalog.js';
import { MetricsReads } from '../../../src/store/metrics.js';
import type { PostgresQueue } from '../../../src/store/queue/postgres.js';
import { completeStatement, type Statement } from '../../../src/store/queue/postgres-statements.js';
import { fastPlan } from '../../../src/store/queue/fast-plan.js';
import type { ClaimScope } from '../../../src/store/queue/index.js';
import { queuedHead } from '../../../src/domain/queue-slot.js';

// On PostgreSQL `herald partition` makes the history tables partitioned by ranges of their time-ordered
// ids (docs/design/partitions.md): partitions are made ahead of now, a default partition catches the rest,
// retention drops whole partitions once nothing in them is still needed, and reads by id touch only the
// partitions that can hold what they ask for.

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** The partition a row of `table` is in. */
async function partitionOfRow(db: Kysely<any>, table: string, key: string, id: string): Promise<string> {
  const { rows } = await sql<{ p: string }>`select tableoid::regclass::text as p from ${sql.table(table)}
    where ${sql.ref(key)} = ${id}`.execute(db);
  assert.equal(rows.length, 1, `${table} ${id} is stored`);
  return rows[0]!.p;
}

/** An id made at `at` (newId's are never older than the process's latest: a test's far-future row would move them all). */
const idAt = (kind: IdKind, at: number) => idFrom(kind, at, randomUUID());

/** A message of the store's application made at `at`, with its payload, and a delivery of it made at `deliveredAt`. */
async function history(
  db: Kysely<any>,
  s: { scope: { orgId: string }; appId: string; endpointId: string },
  at: number,
  options: { deliveredAt?: number; status?: string; messageId?: string; attemptAt?: number } = {},
) {
  const messageId = options.messageId ?? idAt('message', at);
  if (!options.messageId) {
    await db
      .insertInto('messages')
      .values({
        id: messageId,
        org_id: s.scope.orgId,
        livemode: 0,
        app_id: s.appId,
        event_type: 'invoice.paid',
        created_at: at,
      })
      .execute();
    await db.insertInto('payloads').values({ message_id: messageId, body: '{}', created_at: at }).execute();
  }
  const deliveredAt = options.deliveredAt ?? at;
  const deliveryId = idAt('delivery', deliveredAt);
  await db
    .insertInto('deliveries')
    .values({
      id: deliveryId,
      org_id: s.scope.orgId,
      livemode: 0,
      app_id: s.appId,
      message_id: messageId,
      endpoint_id: s.endpointId,
      status: options.status ?? 'success',
      attempt_count: 1,
      attempt_seq: 1,
      schedule_step: 1,
      created_at: deliveredAt,
      updated_at: deliveredAt,
    })
    .execute();
  const attemptAt = options.attemptAt ?? deliveredAt + 1_000;
  const attemptId = idAt('attempt', attemptAt);
  await db
    .insertInto('attempts')
    .values({
      id: attemptId,
      delivery_id: deliveryId,
      endpoint_id: s.endpointId,
      attempt_number: 1,
      trigger: 'scheduled',
      status: 'failed',
      duration_ms: 5,
      created_at: attemptAt,
    })
    .execute();
  return { messageId, deliveryId, attemptId };
}

const names = async (db: Kysely<any>, table: string) => (await partitionsOf(db, table as never)).map((p) => p.name);

test('each history table is partitioned: the old table first, ranges made ahead of now, a default for the rest', async (t) => {
  const s = await openStore(t);
  const db = s.store.ctx.db;
  const now = Date.now();
  assert.equal(await s.store.maintainPartitions(), null, 'plain tables until `herald partition`');
  assert.equal(await defaultRows(db), 0);
  assert.equal(await s.store.partitionTables(), true);
  assert.equal(await s.store.partitionTables(), false, 'once');
  const made = (await partitionsOf(db, 'deliveries')).map((p) => p.name);
  for (const { table } of PARTITIONED) {
    const partitions = await partitionsOf(db, table);
    assert.equal(partitions[0]!.name, legacyName(table), 'the table as it was comes first');
    assert.equal(partitions[0]!.range!.from, null);
    assert.equal(partitions.at(-1)!.name, defaultName(table));
    // Contiguous ranges from the old table's end through three whole days after today.
    const ranged = partitions.filter((p) => p.range !== null);
    for (let i = 1; i < ranged.length; i++) assert.equal(ranged[i]!.range!.from, ranged[i - 1]!.range!.to);
    assert.equal(ranged.at(-1)!.range!.to, Math.floor(now / DAY) * DAY + 4 * DAY);
    assert.ok((await names(db, table)).includes(partitionName(table, Math.floor(now / DAY) * DAY + 3 * DAY)));
  }
  // The old table ends on the hour after the next (rows written meanwhile fit); the first range begins there
  // and ends on the day's boundary, whatever the time of day.
  const legacyTo = (await partitionsOf(db, 'deliveries'))[0]!.range!.to;
  assert.ok([legacyEnd(now + HOUR), legacyEnd(Date.now() + HOUR)].includes(legacyTo), String(legacyTo));
  assert.ok(made.includes(partitionName('deliveries', legacyTo)), made.join(', '));
  // Kept again, nothing more is made.
  const work = await s.store.maintainPartitions();
  assert.deepEqual(work, { made: [], dropped: [], defaultRows: 0 });

  // A row goes to the partition of its id's time; indexes carry their partitioned index's name.
  // The day after tomorrow: a whole day's partition even when the old table reaches into tomorrow.
  const whole = boundaryAfter(now, DAY) + DAY;
  const at = whole + 5 * HOUR;
  const { messageId, deliveryId } = await history(db, s, at);
  assert.equal(await partitionOfRow(db, 'messages', 'id', messageId), partitionName('messages', whole));
  assert.equal(await partitionOfRow(db, 'deliveries', 'id', deliveryId), partitionName('deliveries', whole));
  const { rows: indexes } = await sql<{ indexname: string }>`select indexname from pg_indexes
    where tablename = ${partitionName('deliveries', whole)} order by indexname`.execute(db);
  assert.ok(
    indexes.some((i) => i.indexname.startsWith('deliveries_due_p')),
    JSON.stringify(indexes),
  );
  const { rows: options } = await sql<{ reloptions: string[] | null }>`select reloptions from pg_class
    where relname = ${partitionName('deliveries', whole)}`.execute(db);
  assert.deepEqual(options[0]!.reloptions, ['fillfactor=35'], "a delivery partition's pages keep room for claims");
});

test('a row no range covers waits in the default partition, is reported, and moves when its range is made', async (t) => {
  const s = await openStore(t);
  const db = s.store.ctx.db;
  await s.store.partitionTables();
  const far = Date.now() + 100 * DAY;
  const { deliveryId } = await history(db, s, far);
  assert.equal(await partitionOfRow(db, 'deliveries', 'id', deliveryId), defaultName('deliveries'));
  assert.equal(await defaultRows(db), 4, 'the message, payload, delivery and attempt');
  assert.equal(await new MetricsReads(s.store.ctx).defaultPartitionRows(), 4);

  const made = await makeAhead(db, far, DAY, 1);
  assert.ok(made.length >= 8, made.join(', '));
  assert.equal(await defaultRows(db), 0);
  assert.equal(
    await partitionOfRow(db, 'deliveries', 'id', deliveryId),
    partitionName('deliveries', Math.floor(far / DAY) * DAY),
  );
  // The gap of a hundred days is one partition per table, not a hundred.
  assert.ok((await names(db, 'deliveries')).length < 12);
});

test('retention drops whole partitions, keeping those with a delivery still to make or a message still named', async (t) => {
  const s = await openStore(t);
  const db = s.store.ctx.db;
  await s.store.partitionTables();
  const day1 = boundaryAfter(Date.now(), DAY) + DAY;
  await makeAhead(db, Date.now(), DAY, 4);
  const settled = await history(db, s, day1 + HOUR);
  const pending = await history(db, s, day1 + DAY + HOUR, { status: 'pending' });
  // An old message replayed later: its new delivery is in a newer partition than the message.
  const replayed = await history(db, s, day1 + 2 * HOUR, { deliveredAt: day1 + 2 * DAY + HOUR });

  // Past retention: the first two days (and everything before), not the third.
  const retention = HOUR;
  const now = day1 + 2 * DAY + retention;
  const dropped = await dropExpired(db, now, retention);
  for (const table of ['attempts', 'deliveries'])
    assert.ok(dropped.includes(partitionName(table as never, day1)), `${table} of day 1 dropped: ${dropped}`);
  assert.ok(!dropped.includes(partitionName('deliveries', day1 + DAY)), 'a pending delivery keeps its partition');
  assert.ok(!dropped.includes(partitionName('messages', day1)), "the replayed message's partition waits");
  assert.ok(!dropped.includes(partitionName('messages', day1 + DAY)), "the pending delivery's message waits");
  assert.ok(dropped.includes(legacyName('deliveries')), 'the old table goes too once its range is past');
  const count = async (table: string, key: string, id: string) =>
    Number(
      (
        await sql<{
          n: number;
        }>`select count(*)::int as n from ${sql.table(table)} where ${sql.ref(key)} = ${id}`.execute(db)
      ).rows[0]!.n,
    );
  assert.equal(await count('deliveries', 'id', settled.deliveryId), 0);
  assert.equal(await count('deliveries', 'id', pending.deliveryId), 1);
  assert.equal(await count('messages', 'id', replayed.messageId), 1);
  assert.equal(await count('payloads', 'message_id', replayed.messageId), 1);

  // Settled and the replay gone, the rest goes at the next run.
  await db.updateTable('deliveries').set({ status: 'success' }).where('id', '=', pending.deliveryId).execute();
  await db.deleteFrom('deliveries').where('id', '=', replayed.deliveryId).execute();
  const later = await dropExpired(db, now, retention);
  for (const name of [
    partitionName('deliveries', day1 + DAY),
    partitionName('messages', day1),
    partitionName('payloads', day1),
    partitionName('messages', day1 + DAY),
  ])
    assert.ok(later.includes(name), `${name} dropped: ${later}`);
  assert.equal(await count('messages', 'id', replayed.messageId), 0);
  assert.ok((await names(db, 'messages')).includes(partitionName('messages', day1 + 2 * DAY)), 'the third day stays');
});

test('a retry that commits while retention drops its partition keeps the delivery: the drop looks again under the lock', async (t) => {
  const s = await openStore(t);
  const db = s.store.ctx.db;
  await s.store.partitionTables();
  // A settled delivery of the table as it was before partitioning (its legacy partition, dropped first).
  const old = await history(db, s, Date.now() - 2 * HOUR);
  const deliveriesPartition = await partitionOfRow(db, 'deliveries', 'id', old.deliveryId);
  const now = boundaryAfter(Date.now(), DAY) + 2 * DAY;
  const retention = HOUR;
  // A retry's transaction starts (beforeRevival, as Deliveries.retry does first); the drop's first look at
  // the partition finds nothing queued, and the drop waits for the revivals lock; the retry then revives the
  // delivery, as enqueueManual does, and commits. The drop looks again under the lock and keeps it.
  let dropping: Promise<string[]> = Promise.resolve([]);
  await db.transaction().execute(async (trx) => {
    await beforeRevival(trx, 'postgres');
    dropping = dropExpired(db, now, retention);
    await new Promise((resolve) => setTimeout(resolve, 500));
    await trx
      .updateTable('deliveries')
      .set({ status: 'pending', run_at: now, next_trigger: 'manual', next_attempt: 2, attempt_seq: 2 })
      .where('id', '=', old.deliveryId)
      .execute();
  });
  const dropped = await dropping;
  assert.ok(dropped.includes(legacyName('attempts')), `attempts, never revived, go without the lock: ${dropped}`);
  assert.ok(!dropped.includes(deliveriesPartition), "the revived delivery's partition stays");
  const kept = await db.selectFrom('deliveries').select(['id', 'run_at']).where('id', '=', old.deliveryId).execute();
  assert.equal(kept.length, 1, 'the retried delivery is kept');
  assert.notEqual(kept[0]!.run_at, null, 'and queued');
});

test('the row purge waits for a retry under way, and keeps the delivery it revives', async (t) => {
  const s = await openStore(t);
  const db = s.store.ctx.db;
  const old = await history(db, s, Date.now() - 2 * DAY);
  const now = Date.now();
  // The retry revives the settled delivery while the purge's delete would already have picked it.
  let purging: Promise<unknown> = Promise.resolve();
  await db.transaction().execute(async (trx) => {
    await beforeRevival(trx, 'postgres');
    await trx
      .updateTable('deliveries')
      .set({ status: 'pending', run_at: now, next_trigger: 'manual', next_attempt: 2, attempt_seq: 2 })
      .where('id', '=', old.deliveryId)
      .execute();
    purging = purgeExpired(s.store.ctx, { retentionMs: HOUR, auditRetentionMs: 365 * DAY });
    await new Promise((resolve) => setTimeout(resolve, 300));
  });
  await purging;
  const kept = await db.selectFrom('deliveries').select('id').where('id', '=', old.deliveryId).execute();
  assert.equal(kept.length, 1, 'the retried delivery is kept');
  const message = await db.selectFrom('messages').select('id').where('id', '=', old.messageId).execute();
  assert.equal(message.length, 1, 'and its message');
});

test('retries, replays and background batches wait while retention checks and detaches a partition', async (t) => {
  const s = await openStore(t);
  const db = s.store.ctx.db;
  await s.store.partitionTables();
  const old = await history(db, s, Date.now() - HOUR);
  const { task } = await s.store.backgroundTasks.startRecover(s.scope, {
    endpointId: s.endpointId,
    since: Date.now() - DAY,
    until: null,
  });
  const leased = await s.store.backgroundTasks.lease('test-owner', 60_000);
  assert.equal(leased?.id, task.id);
  const finished: string[] = [];
  let revivals: Promise<unknown>[] = [];
  // The drop's side of the lock (dropExpired takes it exclusively for a partition's check and detach).
  await db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${REVIVALS_LOCK})`.execute(trx);
    revivals = [
      s.store.deliveries.retry(s.scope, old.deliveryId).then(() => finished.push('retry')),
      s.store.messages.replay(s.scope, old.messageId).then(() => finished.push('replay')),
      s.store.backgroundTasks.runBatch(leased!, 'test-owner', 60_000, 100).then(() => finished.push('recover')),
    ];
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual(finished, [], 'each revival waits for the drop');
  });
  await Promise.all(revivals);
  assert.deepEqual(finished.sort(), ['recover', 'replay', 'retry']);
});

/**
 * The partitions a statement's plan reads (EXPLAIN ANALYZE: the scans that ran at least once), planned as
 * for tables too large to read whole or sort (on a test's few rows PostgreSQL would read each partition
 * whole, which says nothing about the plan a real table gets).
 */
async function partitionsRead(db: Kysely<any>, query: string): Promise<string[]> {
  return (await partitionsOfPlan(db, query)).read;
}

/**
 * The relations a statement's plan holds (`planned`: PostgreSQL opens and locks each one when the statement
 * runs, whether or not it reads it) and those it read (`read`), as partitionsRead plans them.
 */
async function partitionsOfPlan(db: Kysely<any>, query: string): Promise<{ planned: string[]; read: string[] }> {
  const rows = await db.connection().execute(async (conn) => {
    await sql`set enable_seqscan = off; set enable_sort = off`.execute(conn);
    try {
      return (await sql<{ 'QUERY PLAN': unknown }>`explain (analyze, format json) ${sql.raw(query)}`.execute(conn))
        .rows;
    } finally {
      await sql`reset enable_seqscan; reset enable_sort`.execute(conn);
    }
  });
  const planned = new Set<string>();
  const read = new Set<string>();
  const visit = (node: Record<string, unknown>) => {
    const relation = node['Relation Name'];
    if (typeof relation === 'string') planned.add(relation);
    if (typeof relation === 'string' && Number(node['Actual Loops']) > 0) read.add(relation);
    for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) visit(child);
  };
  const plan = rows[0]!['QUERY PLAN'] as { Plan: Record<string, unknown> }[];
  visit(plan[0]!.Plan);
  return { planned: [...planned], read: [...read] };
}

/** A store statement's text with its parameters written in, as PostgreSQL plans a statement run once. */
function inlined(compiled: { sql: string; parameters: readonly unknown[] }): string {
  return compiled.parameters.reduce<string>(
    (text, value, i) =>
      text.replace(new RegExp(`\\$${i + 1}(?!\\d)`), typeof value === 'number' ? String(value) : `'${String(value)}'`),
    compiled.sql,
  );
}

test('reads by id and a page of a list read only the partitions that can hold their rows', async (t) => {
  const s = await openStore(t);
  const db = s.store.ctx.db;
  await s.store.partitionTables();
  const day1 = boundaryAfter(Date.now(), DAY) + DAY;
  await makeAhead(db, Date.now(), DAY, 8);
  const made = [];
  for (let day = 0; day < 6; day++) made.push(await history(db, s, day1 + day * DAY + HOUR));
  await sql`analyze`.execute(db);
  const total = (await names(db, 'deliveries')).length;
  assert.ok(total >= 9, `${total} partitions`);
  const inPartitionsOf = (table: string, read: string[]) => read.filter((name) => name.startsWith(`${table}_`));
  const middle = made[2]!;

  for (const [table, key, id] of [
    ['deliveries', 'id', middle.deliveryId],
    ['messages', 'id', middle.messageId],
    ['payloads', 'message_id', middle.messageId],
    ['attempts', 'id', middle.attemptId],
  ] as const) {
    const read = await partitionsRead(db, `select * from ${table} where ${key} = '${id}'`);
    assert.deepEqual(inPartitionsOf(table, read), [partitionName(table, day1 + 2 * DAY)], `${table} by id`);
  }

  // A delivery's attempts (Deliveries.recentAttempts): made between its creation and its last change, so
  // read in the partitions of those days only.
  const delivery = { id: middle.deliveryId, updated_at: day1 + 2 * DAY + HOUR };
  assert.deepEqual(
    (await s.store.deliveries.recentAttempts(delivery)).map((a) => a.id),
    [middle.attemptId],
  );
  const attemptsRead = await partitionsRead(db, inlined(s.store.deliveries.recentAttemptsQuery(delivery).compile()));
  assert.deepEqual(inPartitionsOf('attempts', attemptsRead), [partitionName('attempts', day1 + 2 * DAY)]);

  // A page of the environment's deliveries (Deliveries.list), newest first, before a cursor: the cursor's
  // partition, then the ones under it until the page is full, not every partition.
  const page = await partitionsRead(
    db,
    inlined(s.store.deliveries.listQuery(s.scope, { limit: 1, cursor: made[4]!.deliveryId }).compile()),
  );
  assert.deepEqual(inPartitionsOf('deliveries', page).sort(), [
    partitionName('deliveries', day1 + 2 * DAY),
    partitionName('deliveries', day1 + 3 * DAY),
    partitionName('deliveries', day1 + 4 * DAY),
  ]);

  // A list bounded in time: only the partitions of its days are in the plan at all, and nothing of
  // messages (the page's event types are read by their messages' ids).
  const bounded = { since: day1 + 2 * DAY, until: day1 + 4 * DAY };
  const boundedPlan = await partitionsOfPlan(
    db,
    inlined(s.store.deliveries.listQuery(s.scope, { limit: 50 }, bounded).compile()),
  );
  assert.deepEqual(inPartitionsOf('deliveries', boundedPlan.planned).sort(), [
    partitionName('deliveries', day1 + 2 * DAY),
    partitionName('deliveries', day1 + 3 * DAY),
  ]);
  assert.deepEqual(inPartitionsOf('messages', boundedPlan.planned), []);
  const listed = await s.store.deliveries.list(s.scope, { limit: 50 }, bounded);
  assert.deepEqual(
    listed.items.map((item) => [item.id, item.event_type]),
    [made[3]!, made[2]!].map((row) => [row.deliveryId, 'invoice.paid']),
  );
  // The page's event types: the partitions of its messages' days only.
  const typesPlan = await partitionsOfPlan(
    db,
    inlined(s.store.deliveries.eventTypesQuery([made[3]!.messageId, made[1]!.messageId]).compile()),
  );
  assert.deepEqual(inPartitionsOf('messages', typesPlan.planned).sort(), [
    partitionName('messages', day1 + 1 * DAY),
    partitionName('messages', day1 + 3 * DAY),
  ]);
  // A delivery read by id with its event type, the same.
  assert.equal((await s.store.deliveries.get(s.scope, middle.deliveryId))?.event_type, 'invoice.paid');
});

/** The relations PostgreSQL plans a statement of the queue over, with its values (a custom plan, as each run gets). */
async function relationsPlanned(db: Kysely<any>, { text, values }: Statement): Promise<string[]> {
  const { rows } = await db.executeQuery(CompiledQuery.raw(`explain (format json) ${text}`, values));
  const planned = new Set<string>();
  const visit = (node: Record<string, unknown>) => {
    if (typeof node['Relation Name'] === 'string') planned.add(node['Relation Name']);
    for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) visit(child);
  };
  visit((rows[0] as { 'QUERY PLAN': { Plan: Record<string, unknown> }[] })['QUERY PLAN'][0]!.Plan);
  return [...planned];
}

test('on partitioned tables an outcome batch plans only the partitions of its deliveries', async (t) => {
  const s = await openStore(t);
  const db = s.store.ctx.db;
  await s.store.partitionTables();
  await makeAhead(db, Date.now(), DAY, 8);
  const all = await names(db, 'deliveries');
  assert.ok(all.length >= 9, `${all.length} partitions`);
  await s.emit(3);
  const queue = s.store.queue as PostgresQueue;
  const claimed = await queue.claimLoaded('wrk_part', 10);
  assert.equal(claimed.length, 3);
  const now = Date.now();
  const outcomes = claimed.map(({ task, input }) => ({ input: { ...input!, task }, result: outcome(200, now) }));
  const plan = fastPlan(outcomes, 'wrk_part', s.config, now)!;
  // Made now, they are in the partition that holds now (the old table's, which runs to the hour after next).
  const holding = [
    ...new Set(await Promise.all(claimed.map(({ task }) => partitionOfRow(db, 'deliveries', 'id', task.delivery_id)))),
  ];
  assert.equal(holding.length, 1);
  const deliveriesIn = (relations: string[]) => relations.filter((name) => name.startsWith('deliveries_')).sort();

  // The ranged form names its deliveries' id range: PostgreSQL plans (locks, opens) their partition alone.
  const ranged = completeStatement(plan, true);
  assert.equal(ranged.name, 'herald_complete_plain_ranged');
  assert.deepEqual(deliveriesIn(await relationsPlanned(db, ranged)), holding);
  // The form for plain tables finds them by id alone: every partition is in its plan.
  const unranged = completeStatement(plan, false);
  assert.deepEqual(deliveriesIn(await relationsPlanned(db, unranged)), [...all].sort());

  // The queue reads that the tables are partitioned and writes the batch with the ranged form.
  assert.deepEqual(
    await queue.completeMany(outcomes, 'wrk_part'),
    outcomes.map(() => true),
  );
  assert.deepEqual(queue.batches, { oneStatement: 1, transaction: 0, ranged: 1 });
  const statuses = await db.selectFrom('deliveries').select('status').execute();
  assert.deepEqual(
    statuses.map((row) => row.status),
    ['success', 'success', 'success'],
  );
});

test('on partitioned tables a claim plans only the partitions from the oldest queued delivery to the next hour', async (t) => {
  const s = await openStore(t);
  const db = s.store.ctx.db;
  await s.store.partitionTables();
  const day1 = boundaryAfter(Date.now(), DAY) + DAY;
  await makeAhead(db, Date.now(), DAY, 8);
  // The store's clock four and a half days on: the old table and the first days' partitions are history.
  const now = day1 + 3 * DAY + 12 * HOUR;
  const queue = s.store.queue as PostgresQueue;
  for (const ctx of [s.store.ctx, (queue as unknown as { ctx: { now: () => number } }).ctx]) ctx.now = () => now;
  const queueAt = (deliveryId: string, runAt: number) =>
    db
      .updateTable('deliveries')
      .set({
        status: 'pending',
        attempt_count: 0,
        attempt_seq: 0,
        schedule_step: 0,
        ...queuedHead(1, 'scheduled', runAt),
      })
      .where('id', '=', deliveryId)
      .execute();
  // Settled history on days 1 and 2; queued deliveries on day 3 (a retry) and on the clock's day, one of
  // them of a message of day 1 (a replay).
  const settled = [await history(db, s, day1 + HOUR), await history(db, s, day1 + DAY + HOUR)];
  const retry = await history(db, s, day1 + 2 * DAY + HOUR);
  const fresh = await history(db, s, now - HOUR);
  const replay = await history(db, s, now - HOUR, { messageId: settled[0]!.messageId });
  for (const row of [retry, fresh, replay]) await queueAt(row.deliveryId, now - 1_000);

  const inPartitionsOf = (table: string, relations: string[]) =>
    relations.filter((name) => name.startsWith(`${table}_`)).sort();
  const claimPlan = async (scope: ClaimScope) => {
    const { statement, ranges } = await queue.claimOf('wrk_part', 10, scope);
    assert.ok(ranges, 'partitioned: the claim is ranged');
    const planned = await relationsPlanned(db, statement);
    return { deliveries: inPartitionsOf('deliveries', planned), messages: inPartitionsOf('messages', planned) };
  };
  // A top-up: from the oldest partition holding a queued delivery (day 3) to the one holding the next hour
  // (day 4).
  const plan = await claimPlan({ only: s.endpointId });
  assert.deepEqual(plan.deliveries, [
    partitionName('deliveries', day1 + 2 * DAY),
    partitionName('deliveries', day1 + 3 * DAY),
  ]);
  // Messages from an hour before that (clocks of other processes): day 2's partition too.
  assert.deepEqual(plan.messages, [
    partitionName('messages', day1 + DAY),
    partitionName('messages', day1 + 2 * DAY),
    partitionName('messages', day1 + 3 * DAY),
  ]);
  // The idle worker's look ahead (nextDueAt) reads from there on too, not the settled days before.
  const look = queue.nextDueQuery([], now).compile();
  const ahead = await relationsPlanned(db, { name: '', text: look.sql, values: [...look.parameters] });
  const aheadDeliveries = inPartitionsOf('deliveries', ahead);
  assert.ok(aheadDeliveries.includes(partitionName('deliveries', day1 + 2 * DAY)), `${aheadDeliveries}`);
  for (const settledDay of [legacyName('deliveries'), partitionName('deliveries', day1 + DAY)])
    assert.ok(!aheadDeliveries.includes(settledDay), `${settledDay} in ${aheadDeliveries}`);
  assert.equal(await queue.nextDueAt([], now - 2_000), now - 1_000);

  // All three are claimed, each with its input; the replay's message lies outside the claim's range and is
  // read by a statement of its own, with the state its outcome's plan starts from.
  const claimed = await queue.claimLoaded('wrk_part', 10, { only: s.endpointId });
  const byDelivery = new Map(claimed.map((c) => [c.task.delivery_id, c]));
  assert.deepEqual([...byDelivery.keys()].sort(), [retry, fresh, replay].map((r) => r.deliveryId).sort());
  assert.equal(byDelivery.get(fresh.deliveryId)!.input?.delivery.messageId, fresh.messageId);
  const replayed = byDelivery.get(replay.deliveryId)!.input;
  assert.equal(replayed?.delivery.messageId, settled[0]!.messageId);
  assert.equal(replayed?.payloadJson, '{}');
  assert.equal(replayed?.endpoint?.id, s.endpointId);
  assert.equal(replayed?.claimedState?.delivery.status, 'pending');

  // A delivery of day 1 queued again (a manual retry): a top-up reads from where the queue began when last
  // read and does not see it; the next whole-queue claim reads where it begins again, and takes it.
  await queue.release(
    claimed.map((c) => c.task),
    'wrk_part',
  );
  await queueAt(settled[0]!.deliveryId, now - 500);
  const topUp = await queue.claimLoaded('wrk_part', 10, { only: s.endpointId });
  assert.ok(!topUp.some((c) => c.task.delivery_id === settled[0]!.deliveryId), 'below the range a top-up read');
  await queue.release(
    topUp.map((c) => c.task),
    'wrk_part',
  );
  // (A whole-queue claim has no upper end: a delivery whose id a clock further ahead made is not left.)
  const wholePlan = (await claimPlan({})).deliveries;
  assert.ok(!wholePlan.includes(legacyName('deliveries')), `${wholePlan}`);
  assert.ok(!wholePlan.includes(partitionName('deliveries', day1 - DAY)), `${wholePlan}`);
  for (const day of [0, 1, 2, 3, 4, 6])
    assert.ok(wholePlan.includes(partitionName('deliveries', day1 + day * DAY)), `day ${day + 1}: ${wholePlan}`);
  const whole = await queue.claimLoaded('wrk_part', 10);
  assert.ok(
    whole.some((c) => c.task.delivery_id === settled[0]!.deliveryId),
    'the whole-queue claim takes it',
  );
});

/** `herald <args>` as an operator runs it, on `env`'s database. */
function herald(args: string[], env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...SERVICE_COMMAND, ...args], {
      env: { ...process.env, ...BASE_ENV, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

test('`herald partition` partitions a PostgreSQL store once, online; the embedded store is refused with a clear line', async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  assert.equal((await herald(['migrate'], database.env)).code, 0);
  const first = await herald(['partition'], database.env);
  assert.equal(first.code, 0, first.out);
  assert.match(first.out, /the history tables are partitioned/);
  const again = await herald(['partition'], database.env);
  assert.match(again.out, /partitioned already/);
  const embedded = await herald(['partition'], {
    HERALD_DATA_DIR: database.env.HERALD_DATA_DIR!,
    HERALD_DATABASE_URL: '',
  });
  assert.notEqual(embedded.code, 0);
  assert.match(embedded.out, /partitions are for PostgreSQL/);
});
