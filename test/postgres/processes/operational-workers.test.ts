import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { createTestDatabase } from '../../support/service.js';
import { bootstrap } from '../../support/client.js';
import { eventually, Receiver } from '../../support/receiver.js';
import { pooled, startHerald, stopAll, type HeraldProcess } from '../../support/processes.js';
import { webhookHeaders } from '../../support/delivery.js';

// Operational events with two worker processes on one PostgreSQL database: each occurrence (a delivery
// failing, exhausted or recovered) is raised exactly once, whichever worker records the outcome, because
// it is written by the transaction that records it; one worker is SIGKILLed midway and the other takes its
// work over, and still nothing is lost or raised twice. The dedupe key is webhook-id, the operational
// message's id: one occurrence never arrives under two ids (the same id twice is a retry, allowed).

const PER_APP = 25;

test('two worker processes, one SIGKILLed midway, raise each operational event once per occurrence', {
  timeout: 180_000,
}, async (t) => {
  const database = await createTestDatabase();
  const ops = await new Receiver().start();
  // A delivery of /flaky fails its first three attempts and then succeeds (failing, then recovered); one
  // of /dead always fails (failing, then exhausted).
  const tries = new Map<string, number>();
  const customers = await new Receiver().start();
  customers.respond = (r) => {
    const id = String(r.headers['webhook-id']);
    const n = (tries.get(id) ?? 0) + 1;
    tries.set(id, n);
    return { status: r.path.startsWith('/flaky') && n > 3 ? 200 : 500 };
  };
  const processes: HeraldProcess[] = [];
  const sql = new pg.Client({ connectionString: database.env.HERALD_DATABASE_URL });
  t.after(async () => {
    await sql.end().catch(() => {});
    await stopAll(processes);
    await ops.stop();
    await customers.stop();
    await database.drop();
  });
  const env = {
    ...database.env,
    HERALD_RETRY_SCHEDULE: '0s,100ms,100ms,100ms',
    HERALD_LEASE: '10s',
    HERALD_ATTEMPT_TIMEOUT: '3s',
  };
  processes.push(
    ...(await Promise.all([startHerald('api', env), startHerald('worker', env), startHerald('worker', env)])),
  );
  await sql.connect();
  const { test: api } = await bootstrap(processes[0]!.url);
  const op = await api.post('/api/v1/operational-endpoints', { url: `${ops.url}/ops` });
  assert.equal(op.status, 201);

  const expected: string[] = [];
  const flaky: string[] = [];
  for (const path of ['flaky/1', 'flaky/2', 'dead/1', 'dead/2']) {
    const app = await api.post('/api/v1/applications', { name: path });
    const endpoint = await api.post('/api/v1/endpoints', { app_id: app.body.id, url: `${customers.url}/${path}` });
    assert.equal(endpoint.status, 201);
    expected.push(`endpoint.created ${endpoint.body.id}`);
    const deliveryIds = await pooled(PER_APP, 5, async (n) => {
      const reply = await api.post('/api/v1/messages', {
        app_id: app.body.id,
        event_type: 'invoice.paid',
        payload: { n },
      });
      assert.equal(reply.status, 201);
      return reply.body.delivery_ids[0] as string;
    });
    if (path.startsWith('flaky')) flaky.push(...deliveryIds);
    else
      for (const id of deliveryIds) expected.push(`message.attempt.failing ${id}`, `message.attempt.exhausted ${id}`);
  }

  const distinctIds = () => new Set(ops.received.map((r) => String(r.headers['webhook-id']))).size;
  await eventually(async () => distinctIds() >= 40, 60_000, 'a first part of the events');
  processes[2]!.kill('SIGKILL');
  await processes[2]!.exited;

  // A flaky delivery failing, then recovered, if three of its failed attempts were recorded before its
  // success: an attempt the killed worker made but never recorded is no failure of the delivery.
  await eventually(
    async () =>
      Number(
        (
          await sql.query(`select count(*)::int as n from deliveries where id = any($1) and status = 'success'`, [
            flaky,
          ])
        ).rows[0].n,
      ) === flaky.length,
    90_000,
    'every flaky delivery delivered',
  );
  const { rows: failedBefore } = await sql.query(
    `select delivery_id as id, count(*)::int as failed from attempt_log where delivery_id = any($1) and status = 'failed' group by 1`,
    [flaky],
  );
  for (const { id, failed } of failedBefore)
    if (failed >= 3) expected.push(`message.attempt.failing ${id}`, `message.attempt.recovered ${id}`);

  // Every occurrence arrives; then nothing more does.
  await eventually(async () => distinctIds() >= expected.length, 90_000, `${expected.length} operational events`);
  await new Promise((resolve) => setTimeout(resolve, 2_000));

  const byId = new Map<string, string>();
  for (const r of ops.received) {
    const event = new Webhook(op.body.signing_secret).verify(r.body, webhookHeaders(r)) as {
      type: string;
      data: { endpoint_id: string; delivery_id?: string };
    };
    byId.set(String(r.headers['webhook-id']), `${event.type} ${event.data.delivery_id ?? event.data.endpoint_id}`);
  }
  const occurrences = [...byId.values()];
  assert.equal(occurrences.length, new Set(occurrences).size, 'no occurrence under two webhook-ids');
  assert.deepEqual(occurrences.sort(), expected.sort());

  // The store holds one operational message per occurrence, each delivered to the operational endpoint: an
  // attempt the killed worker sent but never recorded is recorded once the survivor takes it over (within
  // the dead-worker bound), which may be after its webhook arrived.
  const counts = async () =>
    (
      await sql.query(
        `select count(distinct m.id)::int as messages, count(*) filter (where d.status = 'success')::int as delivered
           from messages m join applications a on a.id = m.app_id join deliveries d on d.message_id = m.id
          where a.operational = 1`,
      )
    ).rows[0];
  await eventually(
    async () => (await counts()).delivered === expected.length,
    30_000,
    'every operational delivery recorded',
  ).catch(() => {});
  assert.deepEqual(await counts(), { messages: expected.length, delivered: expected.length });
});
