import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { jobSender, PEER_SECRET, peerJob } from '../../../bench/peers/job.js';
import { peerDrain } from '../../../bench/peers/drain.js';
import { redisAvailable, REDIS_URL } from '../../../bench/peers/bullmq.js';
import { ReceiverProcess } from '../../../bench/lib/receiver.js';
import { QUICK, type Context } from '../../../bench/lib/context.js';
import { cleanup } from '../../../bench/lib/procs.js';
import { PG_ADMIN_URL } from '../../../bench/lib/pg.js';
import { Receiver } from '../../support/receiver.js';
import pg from 'pg';
import { Redis } from 'ioredis';

// The peers of the benchmark (bench/peers): their requests are what Herald sends (a Standard Webhooks
// signature over Herald's body, no more connections than asked for), and each peer drains a small backlog
// to the receiver in its own process and removes its queue after. Timings are the benchmark's, never
// asserted here.

test('a peer job is signed as Herald signs, in Herald body shape, on at most the connections asked for', async (t) => {
  const receiver = await new Receiver().start();
  t.after(() => receiver.stop());
  let inFlight = 0;
  let most = 0;
  receiver.respond = () => {
    most = Math.max(most, ++inFlight);
    setTimeout(() => inFlight--, 30);
    return { status: 200, delayMs: 30 };
  };
  const sender = jobSender(`${receiver.url}/hook/1`, 4);
  t.after(() => sender.close());
  const createdAt = Date.UTC(2026, 0, 2, 3, 4, 5);
  await Promise.all(Array.from({ length: 20 }, (_, n) => sender.deliver(peerJob(n, createdAt))));

  assert.equal(receiver.received.length, 20);
  assert.equal(most, 4, 'four requests in flight at most, and four reached');
  const r = receiver.received.find((x) => x.headers['webhook-id'] === peerJob(7, createdAt).id)!;
  assert.equal(r.path, '/hook/1');
  const verified = new StandardWebhook(PEER_SECRET).verify(r.body, {
    'webhook-id': String(r.headers['webhook-id']),
    'webhook-timestamp': String(r.headers['webhook-timestamp']),
    'webhook-signature': String(r.headers['webhook-signature']),
  }) as { type: string; timestamp: string; data: { invoice_id: string } };
  assert.deepEqual(
    { type: verified.type, timestamp: verified.timestamp, invoice: verified.data.invoice_id },
    { type: 'invoice.paid', timestamp: '2026-01-02T03:04:05.000Z', invoice: 'inv_7' },
  );
  assert.equal(r.headers['content-type'], 'application/json');
});

test("a peer job that carries its endpoint's URL goes there, with the sender's signature", async (t) => {
  const receiver = await new Receiver().start();
  t.after(() => receiver.stop());
  const sender = jobSender(`${receiver.url}/hook/default`, 2);
  t.after(() => sender.close());
  await sender.deliver({ ...peerJob(1, Date.now(), { emitted_at: 12.5 }), url: `${receiver.url}/hook/own` });
  await sender.deliver(peerJob(2, Date.now()));
  assert.deepEqual(
    receiver.received.map((r) => r.path),
    ['/hook/own', '/hook/default'],
  );
  const body = JSON.parse(receiver.received[0]!.body) as { data: { invoice_id: string; emitted_at: number } };
  assert.deepEqual(body.data, { ...body.data, invoice_id: 'inv_1', emitted_at: 12.5 });
});

test('a non-2xx answer fails the peer job', async (t) => {
  const receiver = await new Receiver().start();
  t.after(() => receiver.stop());
  receiver.respond = () => ({ status: 500 });
  const sender = jobSender(`${receiver.url}/hook`, 1);
  t.after(() => sender.close());
  await assert.rejects(sender.deliver(peerJob(0, Date.now())), /endpoint answered 500/);
});

const redisUp = await redisAvailable();
test('each peer drains a backlog to the receiver and removes its queue after', {
  skip: redisUp ? false : `no Redis on ${REDIS_URL}`,
  timeout: 90_000,
}, async (t) => {
  const logDir = mkdtempSync(join(tmpdir(), 'herald-peers-test-'));
  const receiver = await ReceiverProcess.start(logDir);
  t.after(cleanup);
  const ctx: Context = {
    quick: true,
    sizes: QUICK,
    receiver,
    logDir,
    profileDir: undefined,
    results: new Map(),
    log: () => {},
  };
  const count = 60;
  const redis = new Redis(REDIS_URL);
  t.after(() => redis.disconnect());
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  t.after(() => admin.end());
  for (const peer of ['bullmq', 'graphile-worker'] as const) {
    const run = await peerDrain(ctx, peer, count, 16, 30_000);
    assert.equal(run.delivered, count, `${peer} delivered every job`);
    const ids = new Set((await receiver.arrivals()).map((a) => a[0]));
    for (let n = 0; n < count; n++) assert.ok(ids.has(peerJob(n, 0).id), `${peer} delivered message ${n}`);
    assert.ok(run.rate > 0 && Number.isFinite(run.rate), `${peer} has a rate (${run.rate})`);
    assert.ok(run.cpuMs > 0, `${peer} reports its process's CPU time (${run.cpuMs} ms)`);
    assert.ok(run.peak > 0, `${peer} reports its peak RSS`);
    // Nothing of its queue is left on the shared servers.
    if (peer === 'bullmq') {
      assert.match(run.queue, /^herald-bench-/);
      assert.deepEqual(await redis.keys(`${run.queue}:*`), []);
    } else {
      const { rows } = await admin.query('select 1 from pg_database where datname = $1', [run.queue]);
      assert.equal(rows.length, 0, `database ${run.queue} is dropped`);
    }
  }
});
