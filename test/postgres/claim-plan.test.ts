import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledQuery, sql } from 'kysely';
import { TEST_STORE } from '../support/service.js';
import { openStore } from '../store/helpers.js';

// A claim runs several times a second per worker, so its plan must not read whole tables. The planner
// expects `limit` claimed rows (100), not the dozen or so a claim usually takes; before the claim was
// written for that, it hashed the due ids against a scan of every task row, dead ones included, and
// joined the claimed tasks to their deliveries by reading the whole deliveries table — per claim, while
// that table held about 5,000 to 13,000 rows (most of a small deployment's life).

const skip = TEST_STORE !== 'postgres' ? 'runs only against PostgreSQL (HERALD_TEST_STORE=postgres)' : false;

const DELIVERIES = 6_000;
const DUE = 20;
const BIG_TABLES = ['delivery_tasks', 'deliveries', 'messages', 'payloads'];

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

function seqScans(node: PlanNode): string[] {
  const own = node['Node Type'] === 'Seq Scan' && node['Relation Name'] ? [node['Relation Name']] : [];
  return [...own, ...(node.Plans ?? []).flatMap(seqScans)];
}

test("a claim on PostgreSQL reads tasks and inputs through indexes, whatever the planner expects it to take", { skip, timeout: 60_000 }, async (t) => {
  const { store, scope, appId, endpointId } = await openStore(t);
  const db = store.ctx.db;
  const now = Date.now();
  // A few thousand messages with one delivery each, DUE of them queued now, the rest in a month; then
  // tasks of finished attempts deleted, as the worker does (dead rows until a vacuum).
  await sql`insert into messages select 'msg_plan' || g, ${scope.orgId}, 0, ${appId}, 'invoice.paid', ${now}::bigint from generate_series(1, ${DELIVERIES}::int) g`.execute(db);
  await sql`insert into payloads select 'msg_plan' || g, '{"n":' || g || '}', ${now}::bigint from generate_series(1, ${DELIVERIES}::int) g`.execute(db);
  await sql`insert into deliveries select 'dlv_plan' || g, ${scope.orgId}, 0, ${appId}, 'msg_plan' || g, ${endpointId}, 'pending', 0, 0, 0, null, ${now}::bigint, ${now}::bigint
    from generate_series(1, ${DELIVERIES}::int) g`.execute(db);
  await sql`insert into delivery_tasks select 'tsk_plan' || g, 'dlv_plan' || g, ${endpointId}, 'initial', 1,
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
    const compiled = query.compile();
    const explained = await db.executeQuery<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(CompiledQuery.raw(`explain (format json) ${compiled.sql}`, [...compiled.parameters]));
    const scanned = seqScans(explained.rows[0]!['QUERY PLAN'][0].Plan).filter((table) => BIG_TABLES.includes(table));
    assert.deepEqual(scanned, [], `${name}: whole-table reads in the claim's plan`);
  }

  // And the claim still takes exactly the due tasks, each with its input.
  const claimed = await queue.claimLoaded('wrk_plan', 100, []);
  assert.equal(claimed.length, DUE);
  for (const { task, input } of claimed) {
    assert.equal(input?.delivery.id, task.delivery_id);
    assert.equal(input?.payloadJson, `{"n":${task.id.slice('tsk_plan'.length)}}`);
    assert.equal(input?.endpoint?.id, endpointId);
  }
  assert.deepEqual(await queue.claimLoaded('wrk_plan', 100, []), [], 'claimed tasks are leased');
});
