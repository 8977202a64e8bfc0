import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EMPTY_QUEUE } from '../../../src/domain/queue-slot.js';
import { setup, startReceiver } from '../../support/delivery.js';
import { assertError } from '../../support/api.js';
import { eventually } from '../../support/receiver.js';
import { bootstrap } from '../../support/client.js';
import { openStore } from '../../support/store.js';
import { Client } from '../../support/client.js';
import { startTestService } from '../../support/service.js';

// Recovering an endpoint: POST /endpoints/{id}/recover gives every failed or disabled delivery of messages
// created in [since, until) one new attempt, in the background, in bounded batches that any worker resumes.

/** The background task once it has finished (read until it has, for up to 15 s). */
function finishedTask(api: Client, id: string) {
  return eventually(
    async () => {
      const read = await api.get(`/api/v1/background-tasks/${id}`);
      return read.body.status === 'finished' ? read.body : null;
    },
    15_000,
    'the task to finish',
  );
}

test('recover gives the failed deliveries of the range a new attempt, followed through its background task', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s' });
  let down = true;
  const receiver = await startReceiver(t, () => ({ status: down ? 500 : 200 }));
  const endpoint = await s.endpoint(`${receiver.url}/down`);
  const before = await s.emit({ n: 'before' });
  await s.until(before.deliveryIds[0]!, (d) => d.status === 'failed', 'the early message failed');
  await new Promise((resolve) => setTimeout(resolve, 20));
  const since = new Date().toISOString();
  const inRange = [];
  for (let i = 0; i < 5; i++) inRange.push(await s.emit({ i }));
  for (const e of inRange) await s.until(e.deliveryIds[0]!, (d) => d.status === 'failed', 'failed while down');
  down = false;
  const received = receiver.received.length;

  const started = await s.api.post(`/api/v1/endpoints/${endpoint.id}/recover`, { since });
  assert.equal(started.status, 202);
  assert.equal(started.body.object, 'background_task');
  assert.match(started.body.id, /^task_/);
  assert.equal(started.body.kind, 'endpoint.recover');
  assert.equal(started.body.status, 'running');
  const finished = await finishedTask(s.api, started.body.id);
  assert.deepEqual(finished.data, { deliveries_enqueued: 5 });
  for (const e of inRange) {
    const d = await s.until(e.deliveryIds[0]!, (x) => x.status === 'success', 'recovered');
    assert.equal(d.attempts.length, 2);
    assert.equal(d.attempts[0]!.trigger, 'manual');
  }
  await receiver.waitFor(received + 5);
  assert.equal(receiver.received.length, received + 5, 'only the range was sent again');
  assert.equal((await s.delivery(before.deliveryIds[0]!)).status, 'failed', 'the message before since is left');
});

test('recover: a disabled endpoint is 409, bad ranges 400, and tasks are isolated like every resource', async (t) => {
  const s = await setup(t);
  const endpoint = await s.endpoint('http://127.0.0.1:9/r');
  const since = new Date().toISOString();
  assertError(await s.api.post(`/api/v1/endpoints/${endpoint.id}/recover`, {}), 400, 'invalid_request', /since/);
  assertError(
    await s.api.post(`/api/v1/endpoints/${endpoint.id}/recover`, { since: 'yesterday' }),
    400,
    'invalid_request',
  );
  assertError(
    await s.api.post(`/api/v1/endpoints/${endpoint.id}/recover`, { since, until: since }),
    400,
    'invalid_request',
    /until must be after since/,
  );
  assertError(await s.api.post('/api/v1/endpoints/ep_nope/recover', { since }), 404, 'not_found');
  const task = await s.api.post(`/api/v1/endpoints/${endpoint.id}/recover`, { since });
  assert.equal(task.status, 202);
  assertError(await s.live.get(`/api/v1/background-tasks/${task.body.id}`), 404, 'not_found');
  const { test: other } = await bootstrap(s.service.url);
  assertError(await other.get(`/api/v1/background-tasks/${task.body.id}`), 404, 'not_found');
  assertError(await other.post(`/api/v1/endpoints/${endpoint.id}/recover`, { since }), 404, 'not_found');
  await s.api.patch(`/api/v1/endpoints/${endpoint.id}`, { status: 'disabled' });
  assertError(await s.api.post(`/api/v1/endpoints/${endpoint.id}/recover`, { since }), 409, 'conflict', /enable it/);
});

test('a recovery runs in batches from its cursor, and a task whose worker died is resumed by another', async (t) => {
  const { store, emit, scope, endpointId } = await openStore(t, { HERALD_RETRY_SCHEDULE: '0s' });
  const since = Date.now() - 1;
  await emit(5);
  // As if every attempt failed: the deliveries are `failed`, nothing queued.
  await store.ctx.db
    .updateTable('deliveries')
    .set({ status: 'failed', ...EMPTY_QUEUE })
    .execute();
  const queues = () =>
    store.ctx.db
      .selectFrom('deliveries')
      .select(['id', 'status', 'attempt_seq', 'run_at', 'next_trigger', 'next_attempt', 'queued_after'])
      .orderBy('id')
      .execute();
  const { task } = await store.backgroundTasks.startRecover(scope, { endpointId, since, until: null });

  // A worker takes it, runs one batch of two, and dies holding it. Its lease outlasts a batch on a busy
  // machine (a batch waits for the revivals lock and its statements), so the next lease is refused by it.
  const deadLeaseMs = 1_000;
  const dead = await store.backgroundTasks.lease('bg_dead', deadLeaseMs);
  assert.equal(dead?.id, task.id);
  assert.equal(await store.backgroundTasks.recoverBatch(dead!, 'bg_dead', deadLeaseMs, 2), 'more');
  assert.equal(await store.backgroundTasks.lease('bg_live', 10_000), undefined, 'held while its lease lasts');
  await new Promise((resolve) => setTimeout(resolve, deadLeaseMs + 50));
  const resumed = await store.backgroundTasks.lease('bg_live', 10_000);
  assert.equal(resumed?.id, task.id, 'taken up once the lease ran out');
  assert.equal(resumed!.enqueued, 2);
  assert.equal(
    await store.backgroundTasks.recoverBatch(dead!, 'bg_dead', deadLeaseMs, 2),
    'lost',
    'the dead one lost it',
  );
  assert.equal(await store.backgroundTasks.recoverBatch(resumed!, 'bg_live', 10_000, 2), 'more');
  assert.equal(await store.backgroundTasks.recoverBatch(resumed!, 'bg_live', 10_000, 2), 'done');
  const read = await store.backgroundTasks.get(scope, task.id);
  assert.equal(read!.status, 'finished');
  assert.equal(read!.enqueued, 5);
  const deliveries = await queues();
  assert.equal(deliveries.length, 5);
  assert.ok(
    deliveries.every((d) => d.run_at !== null && d.queued_after === null),
    'one manual attempt each, none twice',
  );
  // Numbered after every attempt made or queued: here none was (the fixture emptied the queues unmade),
  // so the dropped number is handed out again.
  assert.ok(
    deliveries.every((d) => d.next_trigger === 'manual' && Number(d.next_attempt) === 1 && Number(d.attempt_seq) === 1),
    JSON.stringify(deliveries),
  );
  assert.ok(
    deliveries.every((d) => d.status === 'pending'),
    'a delivery whose recovery attempt waits is pending',
  );

  // A second recovery, the first finished, finds nothing to add while those attempts wait.
  const again = await store.backgroundTasks.startRecover(scope, { endpointId, since, until: null });
  assert.equal(again.created, true);
  const leased = await store.backgroundTasks.lease('bg_live', 10_000);
  assert.equal(await store.backgroundTasks.recoverBatch(leased!, 'bg_live', 10_000, 10), 'done');
  assert.equal((await store.backgroundTasks.get(scope, again.task.id))!.enqueued, 0);
  assert.deepEqual(await queues(), deliveries, 'nothing queued behind them, nothing renumbered');
});

test('one recovery of an endpoint runs at a time: concurrent starts make one task', async (t) => {
  const { store, scope, endpointId } = await openStore(t);
  const started = await Promise.all(
    Array.from({ length: 10 }, () => store.backgroundTasks.startRecover(scope, { endpointId, since: 0, until: null })),
  );
  assert.equal(new Set(started.map((s) => s.task.id)).size, 1, 'one task');
  assert.equal(started.filter((s) => s.created).length, 1, 'created once, found nine times');
});

test('the portal recovers its own endpoints only', async (t) => {
  const s = await setup(t);
  const endpoint = await s.endpoint('http://127.0.0.1:9/p');
  const app = (await s.api.post(`/api/v1/applications/${s.appId}/rotate-portal-path`)).body;
  const portal = new Client(s.service.url + app.portal_path);
  const since = new Date().toISOString();
  const started = await portal.post(`/api/endpoints/${endpoint.id}/recover`, { since });
  assert.equal(started.status, 202);
  assert.equal(started.body.kind, 'endpoint.recover');
  assert.equal((await s.api.get(`/api/v1/background-tasks/${started.body.id}`)).status, 200);
  const other = await s.api.post('/api/v1/applications', { name: 'other' });
  const foreign = await s.api.post('/api/v1/endpoints', { app_id: other.body.id, url: 'http://127.0.0.1:9/o' });
  assert.equal((await portal.post(`/api/endpoints/${foreign.body.id}/recover`, { since })).status, 404);
  assert.equal((await portal.post(`/api/endpoints/${endpoint.id}/recover`, { since: 'soon' })).status, 400);
});

test('ten concurrent recovers of 50 failed deliveries send exactly 50 requests; five through the portal too', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s' });
  let down = true;
  const receiver = await startReceiver(t, () => ({ status: down ? 500 : 200 }));
  const endpoint = await s.endpoint(`${receiver.url}/r`);
  const since = new Date(Date.now() - 1000).toISOString();
  const emitted = [];
  for (let i = 0; i < 50; i++) emitted.push(await s.emit({ i }));
  for (const e of emitted) await s.until(e.deliveryIds[0]!, (d) => d.status === 'failed', 'failed while down');
  down = false;
  const before = receiver.received.length;

  const answers = await Promise.all(
    Array.from({ length: 10 }, () => s.api.post(`/api/v1/endpoints/${endpoint.id}/recover`, { since })),
  );
  assert.deepEqual(
    answers.map((a) => a.status),
    Array(10).fill(202),
  );
  for (const e of emitted) await s.until(e.deliveryIds[0]!, (d) => d.status === 'success', 'recovered');
  // A call while a recovery runs answers with it; one after it finished starts another, which finds the
  // deliveries pending (their attempts queued) and adds nothing.
  const tasks = await Promise.all([...new Set(answers.map((a) => a.body.id))].map((id) => finishedTask(s.api, id)));
  assert.equal(
    tasks.reduce((sum, task) => sum + task.data.deliveries_enqueued, 0),
    50,
    'fifty attempts queued in all',
  );
  await receiver.waitFor(before + 50);
  // Anything queued twice would go out within this time (the schedule is immediate).
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal(receiver.received.length, before + 50, 'one request per failed delivery');
  for (const e of emitted) assert.equal((await s.delivery(e.deliveryIds[0]!)).attempts.length, 2);

  // Through a portal link: five at once, after the deliveries failed again, make one request each.
  down = true;
  const again = [];
  for (let i = 0; i < 5; i++) again.push(await s.emit({ again: i }));
  for (const e of again) await s.until(e.deliveryIds[0]!, (d) => d.status === 'failed', 'failed while down');
  down = false;
  const app = (await s.api.post(`/api/v1/applications/${s.appId}/rotate-portal-path`)).body;
  const portal = new Client(s.service.url + app.portal_path);
  const portalSince = new Date(Date.now() - 60_000).toISOString();
  const middle = receiver.received.length;
  const portalAnswers = await Promise.all(
    Array.from({ length: 5 }, () => portal.post(`/api/endpoints/${endpoint.id}/recover`, { since: portalSince })),
  );
  assert.deepEqual(
    portalAnswers.map((a) => a.status),
    Array(5).fill(202),
  );
  for (const e of again) await s.until(e.deliveryIds[0]!, (d) => d.status === 'success', 'recovered');
  await receiver.waitFor(middle + 5);
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal(receiver.received.length, middle + 5);
});

test('recover since before 1970 recovers from the beginning; until before 1970 is 400', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s' });
  let down = true;
  const receiver = await startReceiver(t, () => ({ status: down ? 500 : 200 }));
  const endpoint = await s.endpoint(`${receiver.url}/old`);
  const e = await s.emit({ n: 1 });
  await s.until(e.deliveryIds[0]!, (d) => d.status === 'failed', 'failed while down');
  down = false;
  assertError(
    await s.api.post(`/api/v1/endpoints/${endpoint.id}/recover`, {
      since: '1900-01-01T00:00:00Z',
      until: '1960-01-01T00:00:00Z',
    }),
    400,
    'invalid_request',
    /before 1970/,
  );
  const started = await s.api.post(`/api/v1/endpoints/${endpoint.id}/recover`, { since: '1900-01-01T00:00:00Z' });
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const finished = await finishedTask(s.api, started.body.id);
  assert.deepEqual(finished.data, { deliveries_enqueued: 1 });
  await s.until(e.deliveryIds[0]!, (d) => d.status === 'success', 'recovered from 1900');
});

test('while a recovery runs, a range it covers answers with it, and a wider one is 409 naming it', async (t) => {
  // An API process runs no background tasks: the recovery stays running.
  const service = await startTestService({ HERALD_ROLE: 'api' });
  t.after(() => service.stop());
  const { test: api } = await bootstrap(service.url);
  const app = await api.post('/api/v1/applications', { name: 'Acme' });
  const endpoint = await api.post('/api/v1/endpoints', { app_id: app.body.id, url: 'http://127.0.0.1:9/r' });
  const recover = (body: object) => api.post(`/api/v1/endpoints/${endpoint.body.id}/recover`, body);
  const first = await recover({ since: '2026-01-01T00:00:00Z' });
  assert.equal(first.status, 202);
  for (const covered of [
    { since: '2026-01-01T00:00:00Z' },
    { since: '2026-06-01T00:00:00Z', until: '2026-07-01T00:00:00Z' },
  ]) {
    const again = await recover(covered);
    assert.equal(again.status, 202);
    assert.equal(again.body.id, first.body.id);
  }
  const wider = await recover({ since: '2025-01-01T00:00:00Z' });
  assertError(wider, 409, 'conflict', new RegExp(`recovery of this endpoint is running \\(${first.body.id}`));
  const tasks = await service.store.ctx.db.selectFrom('background_tasks').select('id').execute();
  assert.equal(tasks.length, 1);
});
