import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledQuery, sql, type Compilable, type Kysely } from 'kysely';
import type { Database } from '../../../src/store/schema.js';
import type { Store } from '../../../src/store/index.js';
import type { PostgresQueue } from '../../../src/store/queue/postgres.js';
import { claimStatement, completeStatement, type Statement } from '../../../src/store/queue/postgres-statements.js';
import { fastPlan } from '../../../src/store/queue/fast-plan.js';
import { taskKey } from '../../../src/domain/outcome-plan.js';
import { queuedHead } from '../../../src/domain/queue-slot.js';
import { CLAIMED_PAYLOAD_LIMIT, type ClaimScope } from '../../../src/store/queue/index.js';
import { openStore } from '../../support/store.js';
import { idFloor } from '../../../src/domain/ids.js';

/** Id stems of this moment: the rows made with them sort where ids made now do (into the current partition). */
const DLV = idFloor('delivery', Date.now());
const MSG = idFloor('message', Date.now());
const ATM = idFloor('attempt', Date.now());

// Statements that run with every emit batch or claim must not read whole tables, whatever the planner
// expects of them, with or without statistics on the tables (autovacuum analyzes them in time; a new
// database, or a server with autovacuum off, has none). The claim expected to take its whole limit (100;
// a claim takes a dozen or so): as `id in (…)` it hashed the due ids against a scan of every queued row,
// dead ones included, and read the whole deliveries table to join them to their inputs. The due attempts
// are read through the partial indexes of the deliveries' queue (src/domain/queue-slot.ts): deliveries_due
// on (run_at, id) and deliveries_due_by_endpoint on (endpoint_id, run_at), both where run_at is not null.
// The idempotency-key lookup named no scope, so it could not use the primary key and read every unexpired key.

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

function nodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodes)];
}

/** Every node of the plan PostgreSQL makes for the statement with its values, as the store sends it. */
async function planNodes(db: Kysely<Database>, query: Compilable | CompiledQuery): Promise<PlanNode[]> {
  const { sql: text, parameters } = 'compile' in query ? query.compile() : query;
  const rows = (await db.executeQuery(CompiledQuery.raw(`explain (format json) ${text}`, [...parameters]))).rows;
  return nodes((rows[0] as { 'QUERY PLAN': [{ Plan: PlanNode }] })['QUERY PLAN'][0].Plan);
}

/**
 * The generic plan PostgreSQL keeps for a prepared statement after its fifth run (the queue's statements
 * are named, so prepared once per connection): made without the values, so it must find its rows through
 * the indexes whatever they are. Read in a transaction rolled back afterwards.
 */
async function genericPlanNodes(db: Kysely<Database>, { text, values }: Statement): Promise<PlanNode[]> {
  let plan: PlanNode[] = [];
  const rollBack = new Error('roll back');
  await db
    .transaction()
    .execute(async (trx) => {
      await trx.executeQuery(CompiledQuery.raw(`prepare plan_check as ${text}`));
      await trx.executeQuery(CompiledQuery.raw('set local plan_cache_mode = force_generic_plan'));
      // EXECUTE takes its values as SQL literals (an array in its text form, as node-postgres sends it).
      const element = (value: unknown) =>
        value === null
          ? 'NULL'
          : typeof value === 'string'
            ? `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`
            : String(value);
      const literal = (value: unknown) =>
        value === null
          ? 'null'
          : typeof value === 'number' || typeof value === 'boolean'
            ? String(value)
            : `'${(Array.isArray(value) ? `{${value.map(element).join(',')}}` : String(value)).replace(/'/g, "''")}'`;
      const rows = (
        await trx.executeQuery(
          CompiledQuery.raw(`explain (format json) execute plan_check(${values.map(literal).join(', ')})`),
        )
      ).rows;
      plan = nodes((rows[0] as { 'QUERY PLAN': [{ Plan: PlanNode }] })['QUERY PLAN'][0].Plan);
      // A prepared statement outlives the transaction (PREPARE is not undone by a rollback).
      await trx.executeQuery(CompiledQuery.raw('deallocate plan_check'));
      throw rollBack;
    })
    .catch((error: unknown) => {
      if (error !== rollBack) throw error;
    });
  return plan;
}

/** The plan of the statement as it ran (after `before`), in a transaction rolled back afterwards: nothing either wrote stays. */
async function executedPlan(
  db: Kysely<Database>,
  { sql: text, parameters }: CompiledQuery,
  before?: CompiledQuery,
): Promise<PlanNode[]> {
  let plan: PlanNode[] = [];
  const rollBack = new Error('roll back');
  await db
    .transaction()
    .execute(async (trx) => {
      if (before) await trx.executeQuery(before);
      const rows = (
        await trx.executeQuery(CompiledQuery.raw(`explain (analyze, format json) ${text}`, [...parameters]))
      ).rows;
      plan = nodes((rows[0] as { 'QUERY PLAN': [{ Plan: PlanNode }] })['QUERY PLAN'][0].Plan);
      throw rollBack;
    })
    .catch((error: unknown) => {
      if (error !== rollBack) throw error;
    });
  return plan;
}

/** Rows a plan read from a table: what its scans returned and what they filtered out, over all their loops. */
const rowsRead = (plan: PlanNode[], table: string) =>
  plan
    .filter((node) => node['Relation Name'] === table && node['Node Type'] !== 'ModifyTable')
    .reduce(
      (sum, node) =>
        sum +
        (node['Actual Rows']! + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)) *
          node['Actual Loops']!,
      0,
    );

const wholeTableReads = (plan: PlanNode[], tables: string[]) =>
  plan
    .filter((node) => node['Node Type'] === 'Seq Scan' && tables.includes(node['Relation Name'] ?? ''))
    .map((node) => node['Relation Name']);

/** The worker's queue runs on sessions of its own (src/store/db.ts), whose settings shape its plans. */
const queueSessions = (store: Store) => store.queueDb;

/** The store's queue as its PostgreSQL driver. */
const postgresQueue = (store: Store) => store.queue as PostgresQueue;

/** A prepared statement of the queue (queue/postgres-statements.ts) as a query to plan. */
const asQuery = ({ text, values }: Statement) => CompiledQuery.raw(text, values);

/** A claim's statement as the queue makes it (claimLoaded). */
const claimOf = (owner: string, limit: number, scope: ClaimScope, now: number, leaseUntil: number) =>
  claimStatement({
    owner,
    leaseUntil,
    now,
    dueAfter: scope.dueAfter ?? 0,
    limit,
    skip: scope.skip ?? [],
    only: scope.only,
    payloadLimit: CLAIMED_PAYLOAD_LIMIT,
  });
const claim = (owner: string, limit: number, scope: ClaimScope, now: number, leaseUntil: number) =>
  asQuery(claimOf(owner, limit, scope, now, leaseUntil));

/**
 * `count` queued messages for the tests' own organization and application: message <MSG><prefix>g with
 * payload {"n":g} and delivery <DLV><prefix>g, its first attempt at the head of its queue (g = 1…count),
 * where `endpointOf` and `runAtOf` are SQL expressions of g. Written with a few statements, not emits.
 */
async function seedQueued(
  db: Kysely<Database>,
  {
    orgId,
    appId,
    prefix,
    count,
    endpointOf,
    runAtOf,
    now,
  }: { orgId: string; appId: string; prefix: string; count: number; endpointOf: string; runAtOf: string; now: number },
): Promise<void> {
  const rows = `generate_series(1, ${count}) g`;
  await sql
    .raw(`insert into messages (id, org_id, livemode, app_id, event_type, created_at)
    select '${MSG}${prefix}' || g, '${orgId}', 0, '${appId}', 'invoice.paid', ${now} from ${rows}`)
    .execute(db);
  await sql
    .raw(
      `insert into payloads (message_id, body, created_at) select '${MSG}${prefix}' || g, '{"n":' || g || '}', ${now} from ${rows}`,
    )
    .execute(db);
  await sql
    .raw(`insert into deliveries (id, org_id, livemode, app_id, message_id, endpoint_id, status, attempt_count, attempt_seq,
      schedule_step, created_at, updated_at, run_at, next_trigger, next_attempt)
    select '${DLV}${prefix}' || g, '${orgId}', 0, '${appId}', '${MSG}${prefix}' || g, ${endpointOf}, 'pending', 0, 1, 0,
      ${now}, ${now}, ${runAtOf}, 'scheduled', 1 from ${rows}`)
    .execute(db);
}

/** The partitions of deliveries that hold no row (noteEmptyPartitions): how a plan reads them costs nothing. */
const emptyPartitions = new Set<string>();

/** Reads which partitions of deliveries are empty, for deliveryIndexes to leave out. */
async function noteEmptyPartitions(db: Kysely<Database>): Promise<void> {
  const { rows } = await sql<{ name: string; n: number }>`select c.relname as name,
      (select count(*)::int from deliveries d where d.tableoid = c.oid) as n
    from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'deliveries'::regclass`.execute(db);
  emptyPartitions.clear();
  for (const row of rows) if (row.n === 0) emptyPartitions.add(row.name);
}

/**
 * The indexes a plan reads deliveries through (by an index scan, or a bitmap of one), by the partitioned
 * index's name (each partition's copy carries it with the partition's suffix, docs/design/partitions.md), in
 * the partitions that hold rows: an empty partition analyzed is read through whichever index, for nothing.
 */
const deliveryIndexes = (plan: PlanNode[]) =>
  [
    ...new Set(
      plan
        .filter((node) => node['Index Name']?.startsWith('deliveries_'))
        .filter(
          (node) =>
            !emptyPartitions.has(
              node['Index Name']!.replace(/^deliveries_\w+?_(?=legacy$|default$|p\d{8}t\d{4}$)/, 'deliveries_'),
            ),
        )
        .map((node) => node['Index Name']!.replace(/_(legacy|default|p\d{8}t\d{4})$/, '')),
    ),
  ].sort();

/**
 * Whether a claim read its due attempts through a due index and the rows it claimed by id: a top-up may
 * read either due index (walking all due attempts in order is as short when the endpoint has most of them).
 */
const claimIndexes = (plan: PlanNode[], topUp: boolean) => {
  const read = deliveryIndexes(plan);
  const due = read.filter((index) => index !== 'deliveries_pkey');
  return (
    read.includes('deliveries_pkey') &&
    due.length === 1 &&
    (topUp ? ['deliveries_due', 'deliveries_due_by_endpoint'] : ['deliveries_due']).includes(due[0]!)
  );
};

const DELIVERIES = 6_000;
const DUE = 20;

test('a claim on PostgreSQL reads due attempts and inputs through indexes, whatever the planner expects it to take', {
  timeout: 60_000,
}, async (t) => {
  const { store, scope, appId, endpointId } = await openStore(t);
  const db = store.ctx.db;
  const now = Date.now();
  // A few thousand messages with one delivery each, DUE of them queued now, the rest in a month; then
  // the queues of finished attempts emptied, as the worker does (dead rows until a vacuum).
  await seedQueued(db, {
    orgId: scope.orgId,
    appId,
    prefix: 'plan',
    count: DELIVERIES,
    endpointOf: `'${endpointId}'`,
    runAtOf: `case when g <= ${DUE} then ${now - 1000} else ${now + 30 * 86_400_000} end`,
    now,
  });
  await sql`update deliveries set run_at = null, next_trigger = null, next_attempt = null, status = 'success'
    where id in (select ${`${DLV}plan`}::text || g from generate_series(${DUE + 1}::int, ${DELIVERIES / 2}::int) g)`.execute(
    db,
  );

  const queue = postgresQueue(store);
  const queueDb = queueSessions(store);
  const leaseUntil = now + 60_000;
  const claims = {
    general: claim('wrk_plan', 100, {}, now, leaseUntil),
    'with busy endpoints left out': claim('wrk_plan', 100, { skip: ['ep_busy1', 'ep_busy2'] }, now, leaseUntil),
    'top-up of one endpoint': claim('wrk_plan', 48, { only: endpointId }, now, leaseUntil),
  };
  for (const statistics of ['without statistics', 'with statistics']) {
    if (statistics === 'with statistics') await sql`analyze`.execute(db);
    await noteEmptyPartitions(db);
    for (const [name, query] of Object.entries(claims)) {
      const plan = await planNodes(queueDb, query);
      const reads = wholeTableReads(plan, ['deliveries', 'messages', 'payloads']);
      assert.deepEqual(reads, [], `${name}, ${statistics}: whole-table reads in the claim's plan`);
      assert.ok(
        claimIndexes(plan, name === 'top-up of one endpoint'),
        `${name}, ${statistics}: the indexes of deliveries read: ${deliveryIndexes(plan)}`,
      );
    }
    for (const [name, statement] of Object.entries({
      general: claimOf('wrk_plan', 100, {}, now, leaseUntil),
      'top-up of one endpoint': claimOf('wrk_plan', 48, { only: endpointId }, now, leaseUntil),
    })) {
      const reads = wholeTableReads(await genericPlanNodes(queueDb, statement), ['deliveries', 'messages', 'payloads']);
      assert.deepEqual(reads, [], `${name}, ${statistics}: whole-table reads in the claim's generic plan`);
    }
  }

  // And the claim still takes the due attempts, at most its limit, leased to the worker, each with its input.
  const first = await queue.claimLoaded('wrk_plan', 5);
  const rest = await queue.claimLoaded('wrk_plan', 100);
  assert.deepEqual([first.length, rest.length], [5, DUE - 5]);
  const leased = await db
    .selectFrom('deliveries')
    .select(['id', 'lease_owner', 'lease_until', 'next_attempt'])
    .where('lease_owner', 'is not', null)
    .execute();
  assert.equal(leased.length, DUE);
  for (const { task, input } of [...first, ...rest]) {
    assert.deepEqual(
      leased.find((row) => row.id === task.delivery_id),
      { id: task.delivery_id, lease_owner: 'wrk_plan', lease_until: task.leaseUntil, next_attempt: 1 },
    );
    assert.equal(input?.delivery.id, task.delivery_id);
    assert.equal(input?.payloadJson, `{"n":${task.delivery_id.slice(`${DLV}plan`.length)}}`);
    assert.equal(input?.endpoint?.id, endpointId);
  }
  assert.deepEqual(await queue.claimLoaded('wrk_plan', 100), [], 'claimed attempts are leased');
});

test('in a backlog on PostgreSQL, a top-up and a batch of outcomes read rows in proportion to what they take', {
  timeout: 120_000,
}, async (t) => {
  // Thousands of due attempts on one endpoint (a receiver back from an outage), a tenth as many on another.
  // Without statistics the planner took a top-up for a few dozen of them to match 0.5% of the table: it read
  // and sorted all of the endpoint's due attempts. A batch of outcomes named its deliveries in a long list
  // and read the whole table to write them.
  for (const total of [3_000, 30_000]) {
    const { store, scope, appId, endpointId, config } = await openStore(t);
    const db = store.ctx.db;
    const queue = postgresQueue(store);
    const queueDb = queueSessions(store);
    const other = (await store.endpoints.create(scope, { appId, url: 'http://127.0.0.1:9/other' })).row.id;
    const now = Date.now();
    const endpointOf = `case when g % 10 = 0 then '${other}' else '${endpointId}' end`;
    await seedQueued(db, {
      orgId: scope.orgId,
      appId,
      prefix: 'b',
      count: total,
      endpointOf,
      runAtOf: `${now - 100_000} + g`,
      now,
    });
    // As many attempts as deliveries made before (a first attempt each): the batch checks its attempts are new.
    await sql
      .raw(`insert into attempts (id, delivery_id, endpoint_id, attempt_number, trigger, status, response_status, response_body, error, duration_ms, created_at)
      select '${ATM}seed' || g, '${DLV}b' || g, ${endpointOf}, 1, 'scheduled', 'failed', 500, null, 'HTTP 500', 1, ${now - 200_000} from generate_series(1, ${total}) g`)
      .execute(db);
    // The endpoint's earliest attempts (every tenth is the other endpoint's), in the order a top-up takes them.
    const earliest = (count: number) => Array.from({ length: count }, (_, i) => i + 1 + Math.floor(i / 9));
    const leaseUntil = now + 60_000;
    const delivered = (g: number) => {
      const task = {
        id: taskKey(`${DLV}b${g}`, 1),
        delivery_id: `${DLV}b${g}`,
        endpoint_id: endpointId,
        trigger: 'scheduled' as const,
        attempt_number: 1,
        leaseUntil,
      };
      const input = {
        task,
        delivery: {
          id: task.delivery_id,
          messageId: `${MSG}b${g}`,
          eventType: 'invoice.paid',
          createdAt: now,
          livemode: false,
          traceparent: null,
          tracestate: null,
        },
        endpoint: {
          id: endpointId,
          url: 'http://127.0.0.1:9/hook',
          publicOnly: false,
          status: 'active' as const,
          secrets: { current: '', previous: [] },
          headers: {},
        },
        payloadJson: null,
        payloadLater: false,
        // As the claim leaves it (seedQueued's rows, leased): the plan's write checks it still holds.
        claimedState: {
          delivery: {
            status: 'pending' as const,
            attempt_count: 0,
            schedule_step: 0,
            attempt_seq: 1,
            first_attempt_id: null,
            ...queuedHead(1, 'scheduled', now - 100_000 + g),
            lease_owner: 'wrk_plan',
            lease_until: leaseUntil,
          },
          endpoint: { status: 'active' as const, failingSince: null, exhaustedAt: null },
        },
      };
      return {
        input,
        result: {
          ok: true,
          responseStatus: 200,
          responseBody: '',
          error: null,
          durationMs: 1,
          retryAfterMs: null,
          at: now,
        },
      };
    };
    for (const statistics of ['without statistics', 'with statistics']) {
      if (statistics === 'with statistics') await sql`analyze`.execute(db);
      await noteEmptyPartitions(db);
      await noteEmptyPartitions(db);
      const where = `${total} queued, ${statistics}`;
      const topUp = await executedPlan(queueDb, claim('wrk_plan', 48, { only: endpointId }, now, leaseUntil));
      // Two reads per attempt taken (the due ones, then the update's lookup of them), with as much again to spare.
      assert.ok(
        rowsRead(topUp, 'deliveries') <= 4 * 48,
        `${where}: a top-up of 48 read ${rowsRead(topUp, 'deliveries')} delivery rows`,
      );
      assert.ok(claimIndexes(topUp, true), `${where}: the indexes of deliveries read: ${deliveryIndexes(topUp)}`);
      for (const count of [100, 500]) {
        // The outcomes of a top-up's attempts, leased to the worker as the top-up leaves them (in the
        // transaction the plan runs in, so rolled back with it).
        // Two forms of the statement: a batch of successes (herald_complete_plain), and one whose first
        // answer failed, which writes the endpoint's health too (herald_complete).
        const failed = (g: number) => {
          const outcome = delivered(g);
          return { ...outcome, result: { ...outcome.result, ok: false, responseStatus: 500, error: 'HTTP 500' } };
        };
        for (const [form, outcomes] of [
          ['herald_complete_plain', earliest(count).map(delivered)],
          ['herald_complete', earliest(count).map((g, i) => (i === 0 ? failed(g) : delivered(g)))],
        ] as const) {
          const lease = sql`update deliveries set lease_owner = 'wrk_plan', lease_until = ${leaseUntil} where id in (${sql.join(outcomes.map(({ input }) => input.task.delivery_id))})`;
          const statement = completeStatement(fastPlan(outcomes, 'wrk_plan', config, now)!);
          assert.equal(statement.name, form);
          const batch = await executedPlan(queueDb, asQuery(statement), lease.compile(queueDb));
          assert.equal(
            (await queueDb.executeQuery(asQuery(statement))).rows.length,
            1,
            'the statement answers (outside the plan, its leases not taken: it writes nothing)',
          );
          assert.deepEqual(
            wholeTableReads(await genericPlanNodes(queueDb, statement), ['deliveries', 'attempts']),
            [],
            `${where}: whole-table reads in the generic plan of ${form} for ${count} outcomes`,
          );
          // Two reads per outcome (its delivery locked and checked, then written), with as much again to spare.
          const read = rowsRead(batch, 'deliveries');
          assert.ok(read <= 4 * count, `${where}: ${form} for ${count} outcomes read ${read} delivery rows`);
          assert.ok(rowsRead(batch, 'attempts') <= 4 * count, `${where}: ${form} for ${count} outcomes read attempts`);
        }
      }
    }

    // And the statements do their work: a top-up takes the endpoint's earliest due attempts, and their
    // outcomes empty exactly those deliveries' queues and count them as delivered.
    const claimed = await queue.claimLoaded('wrk_plan', 48, { only: endpointId });
    assert.deepEqual(
      claimed.map(({ task }) => task.id).sort(),
      earliest(48)
        .map((g) => taskKey(`${DLV}b${g}`, 1))
        .sort(),
    );
    const recorded = claimed.map(({ task, input }) => ({ input: { ...input!, task }, result: delivered(0).result }));
    assert.deepEqual(
      await queue.completeMany(recorded, 'wrk_plan'),
      claimed.map(() => true),
    );
    // On plain tables the statement finds its deliveries by id alone (the ranged form is partitions').
    assert.equal(queue.batches.ranged, 0);
    const left = await db
      .selectFrom('deliveries')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('run_at', 'is not', null)
      .executeTakeFirstOrThrow();
    assert.equal(Number(left.n), total - 48);
    const done = await db
      .selectFrom('deliveries')
      .select(['id', 'attempt_count'])
      .where('status', '=', 'success')
      .execute();
    assert.deepEqual(done.map((row) => row.id).sort(), claimed.map(({ task }) => task.delivery_id).sort());
    assert.ok(done.every((row) => row.attempt_count === 1));
  }
});

test('after a claim, the next claim and the next due attempt are read from the claim on, not past a backlog of endpoints left out', {
  timeout: 60_000,
}, async (t) => {
  const { store, scope, appId, endpointId: busy } = await openStore(t);
  const db = store.ctx.db;
  const other = (await store.endpoints.create(scope, { appId, url: 'http://127.0.0.1:9/other' })).row.id;
  const now = Date.now();
  // 3,000 attempts of the busy endpoint due before everything else, then the other endpoint's first attempt,
  // due half a second ago, its retry in 5 s, and 1,000 more due after that (which a read of the next due
  // time must not walk).
  await seedQueued(db, {
    orgId: scope.orgId,
    appId,
    prefix: 'n',
    count: 4002,
    endpointOf: `case when g > 3000 then '${other}' else '${busy}' end`,
    runAtOf: `case when g = 3001 then ${now + 5_000} when g = 3002 then ${now - 500} when g > 3002 then ${now + 10_000} + g else ${now - 100_000} + g end`,
    now,
  });
  const queueDb = queueSessions(store);
  const windowFrom = now - 1_000;
  for (const statistics of ['without statistics', 'with statistics']) {
    if (statistics === 'with statistics') await sql`analyze`.execute(db);
    await noteEmptyPartitions(db);
    const claimed = await executedPlan(
      queueDb,
      claim('wrk_plan', 100, { skip: [busy], dueAfter: windowFrom }, now, now + 60_000),
    );
    assert.ok(
      rowsRead(claimed, 'deliveries') <= 10,
      `${statistics}: a claim in a window read ${rowsRead(claimed, 'deliveries')} delivery rows`,
    );
    const plan = await executedPlan(queueDb, store.queue.nextDueQuery([busy], now).compile());
    assert.ok(
      rowsRead(plan, 'deliveries') <= 10,
      `${statistics}: the next due attempt read ${rowsRead(plan, 'deliveries')} delivery rows`,
    );
    assert.deepEqual(deliveryIndexes(plan), ['deliveries_due'], `${statistics}: the next due attempt's index`);
  }
  assert.deepEqual(
    (await store.queue.claimLoaded('wrk_plan', 100, { skip: [busy], dueAfter: windowFrom })).map(({ task }) => task.id),
    [taskKey(`${DLV}n3002`, 1)],
  );
  assert.equal(await store.queue.nextDueAt([busy], now), now + 5_000);
});

test("an emit's idempotency-key lookup finds each key through the primary key", {
  timeout: 60_000,
}, async (t) => {
  const { store, scope, appId } = await openStore(t);
  const db = store.ctx.db;
  const now = Date.now();
  // What a day of keyed emits leaves: thousands of unexpired keys in this scope (with their messages) and
  // in other organizations.
  await sql`insert into messages (id, org_id, livemode, app_id, event_type, created_at)
    select ${MSG}::text || 'seed' || g, ${scope.orgId}, 0, ${appId}, 'invoice.paid', ${now}::bigint from generate_series(1, 5000) g`.execute(
    db,
  );
  await sql`insert into idempotency_keys (org_id, livemode, key, message_id, delivery_ids, expires_at)
    select ${scope.orgId}, 0, 'key' || g, ${MSG}::text || 'seed' || g, '[]', ${now + 86_400_000}::bigint from generate_series(1, 5000) g`.execute(
    db,
  );
  await sql`insert into idempotency_keys (org_id, livemode, key, message_id, delivery_ids, expires_at)
    select 'org_other' || (g % 50), g % 2, 'key' || g, 'msg_other' || g, '[]', ${now + 86_400_000}::bigint from generate_series(1, 20000) g`.execute(
    db,
  );
  const request = (key: string) => ({
    scope,
    appId,
    eventType: 'invoice.paid',
    payloadJson: '{}',
    idempotencyKey: key,
  });
  const lookup = store.messages.priorEmitsQuery(db, ['key1', 'key2', 'key3'].map(request), now);
  for (const statistics of ['without statistics', 'with statistics']) {
    if (statistics === 'with statistics') await sql`analyze`.execute(db);
    await noteEmptyPartitions(db);
    const plan = await planNodes(db, lookup);
    const keyReads = plan.filter(
      (node) => node['Relation Name'] === 'idempotency_keys' || node['Index Name']?.startsWith('idempotency_keys'),
    );
    assert.ok(keyReads.length > 0, statistics);
    for (const node of keyReads) {
      assert.equal(
        node['Index Name'],
        'idempotency_keys_pk',
        `${statistics}: ${node['Node Type']} of idempotency_keys`,
      );
      assert.match(node['Index Cond'] ?? '', /\(key = /, `${statistics}: the key is not part of the index lookup`);
    }
    assert.deepEqual(wholeTableReads(plan, ['idempotency_keys', 'messages']), [], statistics);
  }

  // And the lookup finds the scope's own emits: a seeded key repeats its message, a new one creates one.
  const seeded = await store.messages.emit(request('key7'));
  assert.ok(seeded.ok && seeded.idempotent);
  assert.equal(seeded.message.id, `${MSG}seed7`);
  const fresh = await store.messages.emit(request('key_new'));
  assert.ok(fresh.ok && !fresh.idempotent);
  const again = await store.messages.emit(request('key_new'));
  assert.ok(again.ok && again.idempotent);
  assert.equal(again.message.id, fresh.message.id);
});
