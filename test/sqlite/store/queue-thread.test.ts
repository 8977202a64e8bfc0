import { isTransient } from '../../../src/store/errors.js';
import { EMPTY_QUEUE, pick } from '../../../src/domain/queue-slot.js';
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../../src/config.js';
import { Store } from '../../../src/store/index.js';
import { QueueThread } from '../../../src/store/queue-thread.js';
import type { AttemptResult } from '../../../src/store/queue/index.js';
import { wavesHeld } from '../../../src/delivery/worker.js';
import { PURGE_BATCH } from '../../../src/store/retention.js';
import { BASE_ENV } from '../../support/child.js';
import { openStore } from '../../support/store.js';

// A worker process on the embedded store runs its queue on a thread (src/store/queue-thread.ts). These
// check what the thread boundary could break; delivery through it end to end is in crash.test.ts
// ("a worker-only process delivers ...").

const timeout = 60_000;
const OWNER = 'wrk_thread_test';

function ok(): AttemptResult {
  return {
    ok: true,
    responseStatus: 200,
    responseBody: 'ok',
    error: null,
    durationMs: 1,
    retryAfterMs: null,
    at: Date.now(),
  };
}

/** openStore with `messages` emitted, and a queue thread on it, closed before the store. */
async function seeded(
  t: TestContext,
  messages: number,
  env: Record<string, string> = {},
  payloadOf = (i: number) => `{"i":${i}}`,
) {
  const opened = await openStore(t, env);
  await opened.emit(messages, payloadOf);
  const thread = QueueThread.forConfig(opened.config);
  opened.closeFirst(() => thread.close());
  return { ...opened, thread };
}

test('the queue thread claims with opened secrets, hands a lease extension back, and records outcomes', {
  timeout,
}, async (t) => {
  const { store, secret, thread } = await seeded(t, 3);
  const claimed = await thread.claimLoaded(OWNER, 10);
  assert.equal(claimed.length, 3);
  for (const { task, input } of claimed) {
    // One object on this side too, so a lease change reaches what completeMany sends back.
    assert.equal(input!.task, task);
    assert.equal(input!.endpoint!.secrets!.current, secret, 'the thread opens the sealed secret with the service key');
    assert.match(input!.payloadJson!, /^\{"i":\d\}$/);
  }

  const [first] = claimed;
  // A later load (the worker's path for a large payload) hands back the caller's task as well.
  const [reloaded] = await thread.load([first!.task]);
  assert.equal(reloaded!.task, first!.task);
  assert.equal(reloaded!.payloadJson, first!.input!.payloadJson);
  assert.equal(first!.input!.payloadLater, false, 'a small payload comes with the claim');
  // The endpoint read again (an attempt that waited), with its secret opened on the thread.
  assert.deepEqual(await thread.endpointsNow([first!.input!.endpoint!.id, 'ep_gone']), [first!.input!.endpoint]);
  const before = first!.task.leaseUntil;
  await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(await thread.extendLease(first!.task, OWNER), true);
  assert.ok(first!.task.leaseUntil > before, "the new lease end is applied to the caller's task");
  // Completing requires the lease end the task holds now: with the old one it would count as lost.
  const owned = await thread.completeMany(
    claimed.map(({ input }) => ({ input: input!, result: ok() })),
    OWNER,
  );
  assert.deepEqual(owned, [true, true, true]);

  const deliveries = await store.ctx.db.selectFrom('deliveries').selectAll().execute();
  assert.deepEqual(
    deliveries.map((row) => row.status),
    ['success', 'success', 'success'],
  );
  assert.deepEqual(
    deliveries.map((row) => pick(row)),
    [EMPTY_QUEUE, EMPTY_QUEUE, EMPTY_QUEUE],
    'nothing queued',
  );
});

test("outcomes cross to the thread with only what recording reads: one copy of a claim's endpoint, its own retry schedule kept", {
  timeout,
}, async (t) => {
  const { store, secret, thread, endpointId } = await seeded(t, 3);
  await store.ctx.db
    .updateTable('endpoints')
    .set({ retry_schedule: JSON.stringify(['0s', '2h']) })
    .where('id', '=', endpointId)
    .execute();
  const claimed = await thread.claimLoaded(OWNER, 10);
  assert.equal(claimed.length, 3);
  // What the service posts to the thread, seen as the thread receives it (a structured clone).
  const posted: unknown[] = [];
  const worker = (thread as unknown as { thread: { worker: { postMessage(message: unknown): void } } }).thread.worker;
  const post = worker.postMessage.bind(worker);
  worker.postMessage = (message: unknown) => {
    posted.push(structuredClone(message));
    post(message);
  };
  const failed: AttemptResult = { ...ok(), ok: false, responseStatus: 500, responseBody: 'down' };
  const owned = await thread.completeMany(
    claimed.map(({ input }) => ({ input: input!, result: failed })),
    OWNER,
  );
  assert.deepEqual(owned, [true, true, true]);

  const [message] = posted as { call: { method: string; args: [{ input: Record<string, unknown> }[]] } }[];
  assert.equal(message!.call.method, 'completeMany');
  const items = message!.call.args[0];
  const text = JSON.stringify(items);
  assert.ok(!text.includes(secret), 'no signing secret crosses');
  assert.ok(!text.includes('{\\"i\\":'), 'no payload crosses');
  assert.ok(!text.includes('127.0.0.1:9/hook'), "the endpoint's URL stays");
  assert.deepEqual(Object.keys(items[0]!.input).sort(), ['claimedState', 'endpoint', 'task']);
  assert.deepEqual(Object.keys(items[0]!.input.endpoint as object).sort(), ['fifo', 'id', 'retryScheduleMs', 'status']);
  assert.equal(items[1]!.input.endpoint, items[0]!.input.endpoint, "one claim's endpoint crosses once");

  // The endpoint's own schedule decided the retry: its second step, two hours on.
  const runAts = (await store.ctx.db.selectFrom('deliveries').select('run_at').execute()).map((row) =>
    Number(row.run_at),
  );
  for (const runAt of runAts) assert.ok(runAt > Date.now() + 3_600_000, `retried on the endpoint's schedule: ${runAt}`);
});

test("outcomes on the thread that queue an operational webhook's attempt tell the service (onQueued)", {
  timeout,
}, async (t) => {
  const opened = await openStore(t, { HERALD_RETRY_SCHEDULE: '0s,0s,0s,0s' });
  const { store, scope, endpointId } = opened;
  await store.endpoints.createOperational(scope, { url: 'http://127.0.0.1:9/ops' });
  await opened.emit(1);
  let wakes = 0;
  const thread = QueueThread.forConfig(opened.config, () => wakes++);
  opened.closeFirst(() => thread.close());
  // The third failure in a row raises message.attempt.failing, with an attempt for the operational endpoint.
  for (let n = 1; n <= 3; n++) {
    const [claimed] = await thread.claimLoaded(OWNER, 10, { only: endpointId });
    const failed = { ...ok(), ok: false, responseStatus: 500, error: 'HTTP 500' };
    assert.deepEqual(await thread.completeMany([{ input: claimed!.input!, result: failed }], OWNER), [true]);
    // The word comes before the call's answer: both travel the same port, in order.
    assert.equal(wakes, n === 3 ? 1 : 0, `after failure ${n}`);
  }
});

test('a large payload stays out of a claim through the thread and comes with a later load', {
  timeout,
}, async (t) => {
  const large = `{"pad":"${'x'.repeat(40_000)}"}`;
  const { thread } = await seeded(t, 1, {}, () => large);
  const [claimed] = await thread.claimLoaded(OWNER, 10);
  assert.deepEqual([claimed!.input!.payloadJson, claimed!.input!.payloadLater], [null, true]);
  const [loaded] = await thread.load([claimed!.task]);
  assert.equal(loaded!.payloadJson, large);
  assert.equal(loaded!.task, claimed!.task, "the caller's task");
});

test('a queue thread that ends fails the calls under way, and the next call starts a new one', {
  timeout,
}, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-queue-thread-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const config = loadConfig({ ...BASE_ENV, HERALD_DATA_DIR: dataDir });
  // No database yet: the thread cannot open it and ends, and the failed call says why.
  const thread = QueueThread.forConfig(config);
  t.after(() => thread.close());
  const ended = await thread.nextDueAt().then(
    () => assert.fail('answered'),
    (error: unknown) => error,
  );
  assert.match((ended as Error).message, /queue thread ended \(exit code 1\): .*cannot open .*herald.db/);
  assert.equal(isTransient(ended), true, 'the worker tries again soon, and the next call starts another thread');

  const store = await Store.open(config);
  t.after(() => store.close());
  assert.equal(await thread.nextDueAt(), null, 'a new thread serves the call once the database exists');
});

test('close lets the calls under way finish, then refuses new ones', { timeout }, async (t) => {
  const { thread } = await seeded(t, 2);
  const claiming = thread.claimLoaded(OWNER, 10);
  await thread.close();
  assert.equal((await claiming).length, 2);
  await assert.rejects(thread.nextDueAt(), /closed/);
});

test('the retention purge runs on the thread', { timeout }, async (t) => {
  const { store, thread } = await seeded(t, 2, { HERALD_RETENTION: '1s', HERALD_IDEMPOTENCY_TTL: '1s' });
  const claimed = await thread.claimLoaded(OWNER, 10);
  assert.deepEqual(
    await thread.completeMany(
      claimed.map(({ input }) => ({ input: input!, result: ok() })),
      OWNER,
    ),
    [true, true],
  );
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  const counts = await thread.purgeExpired();
  // First attempts that delivered are on their deliveries' rows, and go with them.
  assert.deepEqual([counts.attempts, counts.deliveries, counts.messages], [0, 2, 2]);
  assert.equal((await store.ctx.db.selectFrom('messages').select('id').execute()).length, 0);
});

test('closing stops a purge under way at its next batch, and the purge still answers', { timeout }, async (t) => {
  // More settled history than one purge batch (PURGE_BATCH rows per table).
  const total = PURGE_BATCH + 100;
  const { store, thread, scope, appId } = await seeded(t, 0, { HERALD_RETENTION: '1s', HERALD_IDEMPOTENCY_TTL: '1s' });
  await Promise.all(
    Array.from({ length: total }, (_, i) =>
      store.messages.emit({ scope, appId, eventType: 'invoice.paid', payloadJson: `{"i":${i}}`, idempotencyKey: null }),
    ),
  );
  for (
    let claimed = await thread.claimLoaded(OWNER, 200);
    claimed.length > 0;
    claimed = await thread.claimLoaded(OWNER, 200)
  ) {
    await thread.completeMany(
      claimed.map(({ input }) => ({ input: input!, result: ok() })),
      OWNER,
    );
  }
  await new Promise((resolve) => setTimeout(resolve, 1_100));

  const purging = thread.purgeExpired();
  await thread.close();
  const counts = await purging;
  const removed = Object.values(counts).reduce((sum, n) => sum + n, 0);
  assert.ok(removed > 0 && removed <= PURGE_BATCH, `stopped after its first batch: ${JSON.stringify(counts)}`);
  assert.equal(
    (await store.ctx.db.selectFrom('messages').select('id').execute()).length,
    total,
    'later tables are left for the next purge',
  );
});

test('a worker holds four waves per endpoint, never more than fit in a lease', () => {
  const config = loadConfig({ ...BASE_ENV, HERALD_DATA_DIR: tmpdir() });
  assert.equal(wavesHeld(config), 4, `default lease ${config.leaseMs} ms, timeout ${config.attemptTimeoutMs} ms`);
  // The last wave may wait three timeouts: with 30 s timeouts (a 90 s lease) only three waves fit.
  assert.equal(wavesHeld(loadConfig({ ...BASE_ENV, HERALD_DATA_DIR: tmpdir(), HERALD_ATTEMPT_TIMEOUT: '30s' })), 3);
  // A lease barely longer than one attempt: never fewer than two.
  assert.equal(
    wavesHeld(
      loadConfig({ ...BASE_ENV, HERALD_DATA_DIR: tmpdir(), HERALD_ATTEMPT_TIMEOUT: '1s', HERALD_LEASE: '2500ms' }),
    ),
    2,
  );
});
