import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledQuery, sql, type Compilable, type Kysely } from 'kysely';
import type { Database } from '../../src/store/schema.js';
import { TEST_STORE } from '../support/service.js';
import { openStore } from '../store/helpers.js';

// Statements that run with every emit batch or claim must not read whole tables, whatever the planner
// expects of them, with or without statistics on the tables (autovacuum analyzes them in time; a new
// database, or a server with autovacuum off, has none). The claim expected to take its whole limit (100;
// a claim takes a dozen or so): as `id in (…)` it hashed the due ids against a scan of every task row,
// dead ones included, and read the whole deliveries table to join them to their inputs. The
// idempotency-key lookup named no scope, so it could not use the primary key and read every unexpired key.

const skip = TEST_STORE !== 'postgres' ? 'runs only against PostgreSQL (HERALD_TEST_STORE=postgres)' : false;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Plans?: PlanNode[];
}

function nodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodes)];
}

/** Every node of the plan PostgreSQL makes for the statement with its values, as the store sends it. */
async function planNodes(db: Kysely<Database>, query: Compilable): Promise<PlanNode[]> {
  const { sql: text, parameters } = query.compile();
  const rows = (await db.executeQuery(CompiledQuery.raw(`explain (format json) ${text}`, [...parameters]))).rows;
  return nodes((rows[0] as { 'QUERY PLAN': [{ Plan: PlanNode }] })['QUERY PLAN'][0].Plan);
}

const wholeTableReads = (plan: PlanNode[], tables: string[]) =>
  plan.filter((node) => node['Node Type'] === 'Seq Scan' && tables.includes(node['Relation Name'] ?? '')).map((node) => node['Relation Name']);

const DELIVERIES = 6_000;
const DUE = 20;

test('a claim on PostgreSQL reads tasks and inputs through indexes, whatever the planner expects it to take', { skip, timeout: 60_000 }, async (t) => {
  const { store, scope, appId, endpointId } = await openStore(t);
  const db = store.ctx.db;
  const now = Date.now();
  // A few thousand messages with one delivery each, DUE of them queued now, the rest in a month; then
  // tasks of finished attempts deleted, as the worker does (dead rows until a vacuum).
  await sql`insert into messages (id, org_id, livemode, app_id, event_type, created_at)
    select 'msg_plan' || g, ${scope.orgId}, 0, ${appId}, 'invoice.paid', ${now}::bigint from generate_series(1, ${DELIVERIES}::int) g`.execute(db);
  await sql`insert into payloads (message_id, body, created_at) select 'msg_plan' || g, '{"n":' || g || '}', ${now}::bigint from generate_series(1, ${DELIVERIES}::int) g`.execute(db);
  await sql`insert into deliveries (id, org_id, livemode, app_id, message_id, endpoint_id, status, attempt_count, attempt_seq, schedule_step, next_attempt_at, created_at, updated_at)
    select 'dlv_plan' || g, ${scope.orgId}, 0, ${appId}, 'msg_plan' || g, ${endpointId}, 'pending', 0, 0, 0, null, ${now}::bigint, ${now}::bigint
    from generate_series(1, ${DELIVERIES}::int) g`.execute(db);
  await sql`insert into delivery_tasks (id, delivery_id, endpoint_id, trigger, attempt_number, run_at, lease_owner)
    select 'tsk_plan' || g, 'dlv_plan' || g, ${endpointId}, 'scheduled', 1,
    case when g <= ${DUE}::int then ${now - 1000}::bigint else ${now + 30 * 86_400_000}::bigint end, null from generate_series(1, ${DELIVERIES}::int) g`.execute(db);
  await sql`delete from delivery_tasks where id in (select 'tsk_plan' || g from generate_series(${DUE + 1}::int, ${DELIVERIES / 2}::int) g)`.execute(db);

  const queue = store.queue;
  const leaseUntil = now + 60_000;
  const claims = {
    general: queue['claimLoadedQuery']('wrk_plan', 100, [], undefined, leaseUntil),
    'with busy endpoints left out': queue['claimLoadedQuery']('wrk_plan', 100, ['ep_busy1', 'ep_busy2'], undefined, leaseUntil),
    'top-up of one endpoint': queue['claimLoadedQuery']('wrk_plan', 48, [], endpointId, leaseUntil),
  };
  for (const statistics of ['without statistics', 'with statistics']) {
    if (statistics === 'with statistics') await sql`analyze`.execute(db);
    for (const [name, query] of Object.entries(claims)) {
      const reads = wholeTableReads(await planNodes(db, query), ['delivery_tasks', 'deliveries', 'messages', 'payloads']);
      assert.deepEqual(reads, [], `${name}, ${statistics}: whole-table reads in the claim's plan`);
    }
  }

  // And the claim still takes the due tasks, at most its limit, leased to the worker, each with its input.
  const first = await queue.claimLoaded('wrk_plan', 5, []);
  const rest = await queue.claimLoaded('wrk_plan', 100, []);
  assert.deepEqual([first.length, rest.length], [5, DUE - 5]);
  const leased = await db.selectFrom('delivery_tasks').select(['id', 'lease_owner', 'run_at']).where('run_at', '<', now + 86_400_000).execute();
  assert.equal(leased.length, DUE);
  for (const { task, input } of [...first, ...rest]) {
    assert.deepEqual(leased.find((row) => row.id === task.id), { id: task.id, lease_owner: 'wrk_plan', run_at: task.leaseUntil });
    assert.equal(input?.delivery.id, task.delivery_id);
    assert.equal(input?.payloadJson, `{"n":${task.id.slice('tsk_plan'.length)}}`);
    assert.equal(input?.endpoint?.id, endpointId);
  }
  assert.deepEqual(await queue.claimLoaded('wrk_plan', 100, []), [], 'claimed tasks are leased');
});

test("an emit's idempotency-key lookup finds each key through the primary key", { skip, timeout: 60_000 }, async (t) => {
  const { store, scope, appId } = await openStore(t);
  const db = store.ctx.db;
  const now = Date.now();
  // What a day of keyed emits leaves: thousands of unexpired keys in this scope (with their messages) and
  // in other organizations.
  await sql`insert into messages (id, org_id, livemode, app_id, event_type, created_at)
    select 'msg_seed' || g, ${scope.orgId}, 0, ${appId}, 'invoice.paid', ${now}::bigint from generate_series(1, 5000) g`.execute(db);
  await sql`insert into idempotency_keys (org_id, livemode, key, message_id, delivery_ids, expires_at)
    select ${scope.orgId}, 0, 'key' || g, 'msg_seed' || g, '[]', ${now + 86_400_000}::bigint from generate_series(1, 5000) g`.execute(db);
  await sql`insert into idempotency_keys (org_id, livemode, key, message_id, delivery_ids, expires_at)
    select 'org_other' || (g % 50), g % 2, 'key' || g, 'msg_other' || g, '[]', ${now + 86_400_000}::bigint from generate_series(1, 20000) g`.execute(db);
  const request = (key: string) => ({ scope, appId, eventType: 'invoice.paid', payloadJson: '{}', idempotencyKey: key });
  const lookup = store.messages['priorEmitsQuery'](db, ['key1', 'key2', 'key3'].map(request), now);
  for (const statistics of ['without statistics', 'with statistics']) {
    if (statistics === 'with statistics') await sql`analyze`.execute(db);
    const plan = await planNodes(db, lookup);
    const keyReads = plan.filter((node) => node['Relation Name'] === 'idempotency_keys' || node['Index Name']?.startsWith('idempotency_keys'));
    assert.ok(keyReads.length > 0, statistics);
    for (const node of keyReads) {
      assert.equal(node['Index Name'], 'idempotency_keys_pk', `${statistics}: ${node['Node Type']} of idempotency_keys`);
      assert.match(node['Index Cond'] ?? '', /\(key = /, `${statistics}: the key is not part of the index lookup`);
    }
    assert.deepEqual(wholeTableReads(plan, ['idempotency_keys', 'messages']), [], statistics);
  }

  // And the lookup finds the scope's own emits: a seeded key repeats its message, a new one creates one.
  const seeded = await store.messages.emit(request('key7'));
  assert.ok(seeded.ok && seeded.idempotent);
  assert.equal(seeded.message.id, 'msg_seed7');
  const fresh = await store.messages.emit(request('key_new'));
  assert.ok(fresh.ok && !fresh.idempotent);
  const again = await store.messages.emit(request('key_new'));
  assert.ok(again.ok && again.idempotent);
  assert.equal(again.message.id, fresh.message.id);
});
