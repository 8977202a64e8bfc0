import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledQuery, sql, type Compilable } from 'kysely';
import { idFrom } from '../../../src/domain/ids.js';
import { openStore } from '../../support/store.js';
import { writeAttempts, type WrittenAttempt } from '../../support/attempt-reads.js';

// Attempts are read through the attempt_log view: a row of `attempts`, or a delivery's first attempt on
// the delivery row. PostgreSQL does not carry a join's condition into the view's second part (a subquery
// with a condition of its own), so each read names its rows with conditions on the view itself; with many
// deliveries and attempts of others, none of them reads either table whole, and each finds its attempts.

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Alias?: string;
  Plans?: PlanNode[];
}

const nodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodes)];

test("a delivery's, a message's and one attempt: read through indexes from both parts of the log", async (t) => {
  const { store, scope, endpointId, emit } = await openStore(t);
  const db = store.ctx.db;
  const now = Date.now();
  // Others' history: 6,000 deliveries, half delivered first time (on their rows), half failed (rows).
  const others: WrittenAttempt[] = Array.from({ length: 6000 }, (_, i) => ({
    id: `att_other${String(i).padStart(22, '0')}`,
    delivery_id: `dlv_other${i}`,
    endpoint_id: `ep_other${i % 60}`,
    status: i % 2 === 0 ? 'success' : 'failed',
    response_status: i % 2 === 0 ? 200 : 500,
    duration_ms: 3,
    created_at: now - i * 1000,
  }));
  await writeAttempts(db, others);
  // One message to our endpoint, its delivery's first attempt recorded on the row, then a manual retry's
  // row: the log shows both, newest first.
  const [messageId] = await emit(1);
  // Attempt ids carry their time (a page's cursor places the next page by it).
  const first = idFrom('attempt', now - 10, 'first');
  const second = idFrom('attempt', now, 'second');
  const delivery = await db
    .selectFrom('deliveries')
    .select('id')
    .where('message_id', '=', messageId!)
    .executeTakeFirstOrThrow();
  await db
    .updateTable('deliveries')
    .set({ first_attempt_id: first, first_attempt_at: now - 10, first_duration_ms: 7, first_response_status: 204 })
    .where('id', '=', delivery.id)
    .execute();
  await db
    .insertInto('attempts')
    .values({
      id: second,
      delivery_id: delivery.id,
      endpoint_id: endpointId,
      attempt_number: 2,
      trigger: 'manual',
      status: 'failed',
      response_status: 500,
      response_body: null,
      error: 'HTTP 500',
      duration_ms: 9,
      created_at: now,
    })
    .execute();
  await sql`analyze`.execute(db);

  const recent = await store.deliveries.recentAttempts({ id: delivery.id, updated_at: now });
  assert.deepEqual(
    recent.map((a) => [a.id, a.attempt_number, a.trigger, a.status, a.response_status]),
    [
      [second, 2, 'manual', 'failed', 500],
      [first, 1, 'scheduled', 'success', 204],
    ],
  );
  const page = await store.attempts.list(scope, { limit: 10 }, { messageId: messageId! });
  assert.deepEqual(
    page.items.map((a) => a.id),
    [second, first],
  );
  const byEndpoint = await store.attempts.list(scope, { limit: 1 }, { endpointId });
  assert.deepEqual(
    byEndpoint.items.map((a) => a.id),
    [second],
  );
  const next = await store.attempts.list(scope, { limit: 1, cursor: second }, { endpointId });
  assert.deepEqual(
    next.items.map((a) => a.id),
    [first],
    'the next page starts after the cursor',
  );
  const one = await store.attempts.get(scope, messageId!, first);
  assert.equal(one?.duration_ms, 7);
  assert.equal(await store.attempts.get(scope, messageId!, 'att_other000000000000000000000'), undefined);

  const reads: [string, Compilable][] = [
    ['by message', store.attempts.listQuery(scope, { limit: 10 }, { messageId: messageId! })],
    ['by endpoint', store.attempts.listQuery(scope, { limit: 10 }, { endpointId })],
    ['one', store.attempts.getQuery(scope, messageId!, first)],
  ];
  for (const [name, query] of reads) {
    const { sql: text, parameters } = query.compile();
    const rows = (await db.executeQuery(CompiledQuery.raw(`explain (format json) ${text}`, [...parameters]))).rows;
    const plan = nodes((rows[0] as { 'QUERY PLAN': [{ Plan: PlanNode }] })['QUERY PLAN'][0].Plan);
    const whole = plan.filter(
      (n) =>
        n['Node Type'] === 'Seq Scan' && (n['Relation Name'] === 'attempts' || n['Relation Name'] === 'deliveries'),
    );
    assert.deepEqual(
      whole.map((n) => `${n['Relation Name']} as ${n.Alias}`),
      [],
      `${name}: ${JSON.stringify(rows)}`,
    );
  }
});
