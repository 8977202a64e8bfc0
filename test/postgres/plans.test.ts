import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledQuery, sql, type Compilable, type Kysely } from 'kysely';
import type { Database } from '../../src/store/schema.js';
import { TEST_STORE } from '../support/service.js';
import { openStore } from '../store/helpers.js';

// Statements that run with every emit batch or claim must not read whole tables, whatever the planner
// expects of them, in the plan made for their values (custom) and in the one PostgreSQL may keep for a
// prepared statement (generic, src/store/prepared.ts). The claim expected to take its whole limit (100;
// a claim takes a dozen or so): as `id in (…)` it hashed the due ids against a scan of every task row, dead
// ones included, and read the whole deliveries table to join them to their inputs. The idempotency-key
// lookup named no scope, so it could not use the primary key and read every unexpired key.

const skip = TEST_STORE !== 'postgres' ? 'runs only against PostgreSQL (HERALD_TEST_STORE=postgres)' : false;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

function seqScans(node: PlanNode): string[] {
  const own = node['Node Type'] === 'Seq Scan' && node['Relation Name'] ? [node['Relation Name']] : [];
  return [...own, ...(node.Plans ?? []).flatMap(seqScans)];
}

/** The tables a statement's plan reads whole: the plan for its values, and the generic one. */
async function wholeTableReads(db: Kysely<Database>, query: Compilable): Promise<{ custom: string[]; generic: string[] }> {
  const { sql: text, parameters } = query.compile();
  const params = [...parameters];
  const planOf = (rows: unknown[]) => seqScans((rows[0] as { 'QUERY PLAN': [{ Plan: PlanNode }] })['QUERY PLAN'][0].Plan);
  const custom = planOf((await db.executeQuery(CompiledQuery.raw(`explain (format json) ${text}`, params))).rows);
  const generic = await db.connection().execute(async (session) => {
    await session.executeQuery(CompiledQuery.raw('set plan_cache_mode = force_generic_plan'));
    await session.executeQuery(CompiledQuery.raw(`prepare plan_probe as ${text}`));
    // EXECUTE takes no bind parameters; the generic plan does not depend on the values anyway.
    const values = params.map((value) => (typeof value === 'number' ? String(value) : `'${String(value).replaceAll("'", "''")}'`)).join(', ');
    const rows = (await session.executeQuery(CompiledQuery.raw(`explain (format json) execute plan_probe(${values})`))).rows;
    await session.executeQuery(CompiledQuery.raw('deallocate plan_probe'));
    await session.executeQuery(CompiledQuery.raw('reset plan_cache_mode'));
    return planOf(rows);
  });
  return { custom, generic };
}

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
  for (const [name, query] of Object.entries(claims)) {
    const reads = await wholeTableReads(db, query);
    const large = (tables: string[]) => tables.filter((table) => ['delivery_tasks', 'deliveries', 'messages', 'payloads'].includes(table));
    assert.deepEqual({ custom: large(reads.custom), generic: large(reads.generic) }, { custom: [], generic: [] }, `${name}: whole-table reads in the claim's plans`);
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

test("an emit's idempotency-key lookup reads its scope's keys through the primary key", { skip, timeout: 60_000 }, async (t) => {
  const { store, scope, appId } = await openStore(t);
  const db = store.ctx.db;
  const now = Date.now();
  // Many unexpired keys of other organizations (what one day of keyed emits leaves), and the keys asked for.
  await sql`insert into idempotency_keys (org_id, livemode, key, message_id, delivery_ids, expires_at)
    select 'org_other' || (g % 50), g % 2, 'key' || g, 'msg_other' || g, '[]', ${now + 86_400_000}::bigint from generate_series(1, 20000) g`.execute(db);
  const requests = ['key1', 'key2', 'key3'].map((key) => ({ scope, appId, eventType: 'invoice.paid', payloadJson: '{}', idempotencyKey: key }));
  const reads = await wholeTableReads(db, store.messages['priorEmitsQuery'](db, requests, now));
  assert.deepEqual(reads, { custom: [], generic: [] });

  // And the lookup still finds this scope's emits only: the same keys held by other organizations are not theirs.
  const emitted = await store.messages.emit(requests[0]!);
  assert.ok(emitted.ok);
  const again = await store.messages.emit(requests[0]!);
  assert.ok(again.ok && again.idempotent);
  assert.equal(again.message.id, emitted.message.id);
});
