import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, startReceiver } from '../../support/delivery.js';
import { eventually, type Received } from '../../support/receiver.js';
import { openStore } from '../../support/store.js';
import { startTestService } from '../../support/service.js';
import { bootstrap, type Client } from '../../support/client.js';
import { EMPTY_QUEUE } from '../../../src/domain/queue-slot.js';

// Bulk replay (decisions, "Delivery policy"): POST /endpoints/{id}/bulk-replay gives each of the endpoint's
// deliveries that match its filters one new attempt, in the background, with progress, a cancel, one per
// endpoint at a time, and batches that a worker taking over resumes without queuing anything twice.

/** The task once it is no longer running (read until it is, for up to 15 s). */
function settledTask(api: Client, id: string) {
  return eventually(
    async () => {
      const read = await api.get(`/api/v1/background-tasks/${id}`);
      return read.body.status === 'running' ? null : read.body;
    },
    15_000,
    'the task to settle',
  );
}

/** A bulk replay of every delivery of the endpoint's messages since `since`. */
const everything = (endpointId: string, since: number) => ({
  endpointId,
  since,
  until: Date.now() + 1000,
  eventTypes: null,
  status: null,
  statusCodeClass: null,
  channel: null,
  tag: null,
});

const markOf = (r: Received) => (JSON.parse(r.body) as { data: { mark: string } }).data.mark;

test('bulk replay sends each matching delivery once more, by answer class, status, event type, tag and channel', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s' });
  const answers: Record<string, number> = { ok: 200, boom: 503, gone: 404, later: 500 };
  const receiver = await startReceiver(t, (r) => ({ status: answers[markOf(r)] ?? 200 }));
  const endpoint = await s.endpoint(`${receiver.url}/replayed`, { channels: [] });
  const since = new Date(Date.now() - 1000).toISOString();
  const emit = async (mark: string, eventType = 'invoice.paid', extra: Record<string, unknown> = {}) => {
    const made = await s.api.post('/api/v1/messages', {
      app_id: s.appId,
      event_type: eventType,
      payload: { mark },
      ...extra,
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    return made.body.delivery_ids[0] as string;
  };
  const ids = [
    await emit('ok'),
    await emit('boom'),
    await emit('gone'),
    await emit('later', 'invoice.created', { tags: ['vip'] }),
    await emit('ok', 'customer.created', { tags: ['vip'] }),
  ];
  for (const id of ids) await s.until(id, (d) => d.status !== 'pending', 'each delivery settles');
  await receiver.waitFor(5);

  const replay = async (body: Record<string, unknown>) => {
    const started = await s.api.post(`/api/v1/endpoints/${endpoint.id}/bulk-replay`, { since, ...body });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    assert.equal(started.body.kind, 'endpoint.bulk_replay');
    const before = receiver.received.length;
    const done = await settledTask(s.api, started.body.id);
    assert.equal(done.status, 'finished');
    await eventually(
      async () => receiver.received.length >= before + done.progress.done,
      10_000,
      'the replayed requests',
    );
    await new Promise((resolve) => setTimeout(resolve, 150));
    return { progress: done.progress, marks: receiver.received.slice(before).map(markOf).sort() };
  };

  assert.deepEqual(await replay({ status_code_class: '5xx' }), {
    progress: { done: 2, total: 2 },
    marks: ['boom', 'later'],
  });
  assert.deepEqual(await replay({ status_code_class: '4xx' }), { progress: { done: 1, total: 1 }, marks: ['gone'] });
  assert.deepEqual(await replay({ status: 'success' }), { progress: { done: 2, total: 2 }, marks: ['ok', 'ok'] });
  assert.deepEqual(await replay({ event_types: ['invoice.created', 'customer.created'], tag: 'vip' }), {
    progress: { done: 2, total: 2 },
    marks: ['later', 'ok'],
  });
  assert.deepEqual(await replay({ status: 'failed', event_types: ['invoice.paid'] }), {
    progress: { done: 2, total: 2 },
    marks: ['boom', 'gone'],
  });
  assert.deepEqual(await replay({ channel: 'nowhere' }), { progress: { done: 0, total: 0 }, marks: [] });
  // The replayed attempts are manual ones, numbered after the first.
  const boom = await s.delivery(ids[1]!);
  assert.deepEqual(
    boom.attempts.map((a) => [a.attempt_number, a.trigger]),
    [
      [3, 'manual'],
      [2, 'manual'],
      [1, 'scheduled'],
    ],
  );
});

test('bulk replay: one at a time per endpoint, cancelled on request, bad input refused with nothing started', async (t) => {
  // An API process only: no worker takes the task, so it stays running while the test looks at it.
  const service = await startTestService({ HERALD_ROLE: 'api' });
  t.after(() => service.stop());
  const { test: api } = await bootstrap(service.url);
  const app = (await api.post('/api/v1/applications', { name: 'Bulk' })).body;
  const endpoint = (await api.post('/api/v1/endpoints', { app_id: app.id, url: 'http://127.0.0.1:9/hook' })).body;
  const since = '2026-01-01T00:00:00.000Z';
  const route = `/api/v1/endpoints/${endpoint.id}/bulk-replay`;

  const bad: [Record<string, unknown>, RegExp][] = [
    [{ since, until: '2025-12-31T00:00:00.000Z' }, /since must be before until/],
    [{ since, status_code_class: '6xx' }, /status_code_class/],
    [{ since, status: 'pending' }, /status/],
    [{ since: 'yesterday' }, /since/],
    [{ since, event_types: [] }, /event_types/],
  ];
  for (const [body, message] of bad) {
    const refused = await api.post(route, body);
    assert.equal(refused.status, 400, JSON.stringify(body));
    assert.match(refused.body.error.message, message, JSON.stringify(refused.body));
  }
  assert.deepEqual((await api.get('/api/v1/background-task')).body.data, [], 'nothing started');

  const first = await api.post(route, { since });
  assert.equal(first.status, 202);
  assert.deepEqual(
    [first.body.status, first.body.progress],
    ['running', { done: 0, total: null }],
    'counted by its first batch',
  );
  const second = await api.post(route, { since, status: 'failed' });
  assert.equal(second.status, 409);
  assert.match(second.body.error.message, new RegExp(first.body.id));

  const cancelled = await api.post(`/api/v1/background-tasks/${first.body.id}/cancel`, {});
  assert.equal(cancelled.status, 200);
  assert.equal(cancelled.body.status, 'cancelled');
  assert.equal((await api.get(`/api/v1/background-tasks/${first.body.id}`)).body.status, 'cancelled');
  const again = await api.post(`/api/v1/background-tasks/${first.body.id}/cancel`, {});
  assert.equal(again.status, 409, 'not running: nothing to cancel');
  assert.equal((await api.post('/api/v1/background-tasks/task_00000000000000000000000000/cancel', {})).status, 404);
  assert.equal((await api.post(route, { since })).status, 202, 'once cancelled, another may start');
});

test('a bulk replay whose worker died is resumed by another from its last batch, and queues nothing twice', async (t) => {
  const { store, emit, scope, endpointId } = await openStore(t, { HERALD_RETRY_SCHEDULE: '0s' });
  const since = Date.now() - 1;
  await emit(5);
  // As if each had been delivered: nothing queued.
  await store.ctx.db
    .updateTable('deliveries')
    .set({ status: 'success', ...EMPTY_QUEUE })
    .execute();
  const { task } = await store.backgroundTasks.startBulkReplay(scope, everything(endpointId, since));

  // A worker takes it, runs one batch of two, and dies holding it.
  const dead = await store.backgroundTasks.lease('bg_dead', 200);
  assert.equal(await store.backgroundTasks.bulkReplayBatch(dead!, 'bg_dead', 200, 2), 'more');
  await new Promise((resolve) => setTimeout(resolve, 250));
  const resumed = await store.backgroundTasks.lease('bg_live', 10_000);
  assert.equal(resumed?.id, task.id, 'taken up once the lease ran out');
  assert.deepEqual([resumed!.enqueued, resumed!.total], [2, 5]);
  assert.equal(await store.backgroundTasks.bulkReplayBatch(dead!, 'bg_dead', 200, 2), 'lost', 'the dead one lost it');
  assert.equal(await store.backgroundTasks.bulkReplayBatch(resumed!, 'bg_live', 10_000, 2), 'more');
  assert.equal(await store.backgroundTasks.bulkReplayBatch(resumed!, 'bg_live', 10_000, 2), 'done');
  const read = await store.backgroundTasks.get(scope, task.id);
  assert.deepEqual([read!.status, read!.enqueued, read!.total], ['finished', 5, 5]);
  const deliveries = await store.ctx.db
    .selectFrom('deliveries')
    .select(['next_trigger', 'queued_after', 'status'])
    .execute();
  assert.ok(
    deliveries.every((d) => d.next_trigger === 'manual' && d.queued_after === null),
    `one manual attempt each, none twice: ${JSON.stringify(deliveries)}`,
  );
  // Cancelled while a batch is under way: the batch's write finds it cancelled, and nothing of it is kept.
  const next = await store.backgroundTasks.startBulkReplay(scope, everything(endpointId, since));
  const leased = await store.backgroundTasks.lease('bg_live', 10_000);
  assert.equal(leased?.id, next.task.id);
  await store.backgroundTasks.cancel(scope, next.task.id);
  assert.equal(await store.backgroundTasks.bulkReplayBatch(leased!, 'bg_live', 10_000, 10), 'lost');
  const after = await store.backgroundTasks.get(scope, next.task.id);
  assert.deepEqual([after!.status, after!.enqueued], ['cancelled', 0]);
});
