import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { Svix } from 'svix';
import { setup, startReceiver, webhookHeaders } from '../../support/delivery.js';
import { eventually } from '../../support/receiver.js';
import { watchSandboxCalls } from '../../support/sandbox-calls.js';

// Endpoint transformations (decisions, "Fourth wave", Transformations) against a real receiver: the
// handler's method, URL, headers and payload are what is sent and signed; `cancel` ends the delivery with no
// request; a handler that throws, spins or grows fails the attempt with words saying which, retried on the
// schedule; one endpoint's spinning code does not hold other endpoints' attempts. Tests that are not about
// the deadline give runs a second: the deadline is wall-clock time, and the suite runs on busy cores.

const ROOMY = { HERALD_TRANSFORMATION_TIMEOUT: '1s' };

const RESHAPE = `function handler(webhook) {
  webhook.method = 'PUT';
  webhook.url = webhook.url + '/slack?kind=' + webhook.eventType;
  webhook.headers['X-Kind'] = webhook.eventType;
  webhook.payload = { text: 'paid ' + webhook.payload.data.amount, original: webhook.payload.type };
  return webhook;
}`;

test('a transformation changes the method, URL, headers and body, and the signature covers the body sent', async (t) => {
  const s = await setup(t, ROOMY);
  const receiver = await startReceiver(t);
  const endpoint = await s.endpoint(`${receiver.url}/hook`, { transformation: { code: RESHAPE } });
  const message = await s.emit({ amount: 42 });
  await s.until(message.deliveryIds[0]!, (d) => d.status === 'success', 'delivered');
  const [arrived] = receiver.received;
  assert.equal(arrived!.method, 'PUT');
  assert.equal(arrived!.path, '/hook/slack?kind=invoice.paid');
  assert.equal(arrived!.headers['x-kind'], 'invoice.paid');
  const verified = new Webhook(endpoint.secret).verify(arrived!.body, webhookHeaders(arrived!));
  assert.deepEqual(verified, { text: 'paid 42', original: 'invoice.paid' });
  // The attempt records what was sent.
  const read = await s.delivery(message.deliveryIds[0]!);
  const [attempt] = read.attempts;
  assert.equal(attempt!.status, 'success');
  assert.deepEqual(attempt!.request, {
    method: 'PUT',
    url: `${receiver.url}/hook/slack?kind=invoice.paid`,
    body: arrived!.body,
  });
  assert.equal(attempt!.request_headers!['x-kind'], 'invoice.paid');
});

test('cancel ends the delivery as delivered with a cancelled attempt and no request', async (t) => {
  const s = await setup(t, ROOMY);
  const receiver = await startReceiver(t);
  await s.endpoint(`${receiver.url}/hook`, {
    transformation: {
      code: 'function handler(w) { w.cancel = w.payload.data.skip === true; return w; }',
    },
  });
  const skipped = await s.emit({ skip: true });
  const sent = await s.emit({ skip: false });
  const read = await s.until(skipped.deliveryIds[0]!, (d) => d.status === 'success', 'cancelled delivery ends');
  assert.equal(read.attempts.length, 1);
  assert.equal(read.attempts[0]!.status, 'cancelled');
  assert.equal(read.attempts[0]!.response_status, null);
  await s.until(sent.deliveryIds[0]!, (d) => d.status === 'success', 'the other is delivered');
  assert.equal(receiver.received.length, 1);
  assert.equal(JSON.parse(receiver.received[0]!.body).data.skip, false);
});

test('code that throws, spins or grows fails the attempt, says which, and is retried on the schedule', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s,100ms', HERALD_TRANSFORMATION_TIMEOUT: '300ms' });
  const receiver = await startReceiver(t);
  const cases = [
    {
      code: 'function handler(w) { throw new Error("no shape for " + w.eventType); }',
      error: /threw Error: no shape for invoice\.paid/,
    },
    { code: 'function handler(w) { for (;;) {} }', error: /deadline of 300 ms exceeded/ },
    { code: 'function handler(w) { return "x".repeat(64 * 1024 * 1024); }', error: /memory limit of 8 MB exceeded/ },
    { code: 'function handler(w) { const f = (n) => f(n + 1) + 1; return f(0); }', error: /stack overflow/ },
    { code: 'function handler(w) { return 42; }', error: /bad return value: handler must return the webhook object/ },
    { code: 'function handler(w) { w.headers["webhook-signature"] = "v1,forged"; return w; }', error: /set by Herald/ },
    {
      code: 'function handler(w) { w.url = "http://169.254.169.254/latest"; return w; }',
      error: /bad return value: url/,
    },
  ];
  const endpoints: { id: string }[] = [];
  for (const c of cases) endpoints.push(await s.endpoint(`${receiver.url}/hook`, { transformation: { code: c.code } }));
  const message = await s.emit({ amount: 1 });
  for (const [i, c] of cases.entries()) {
    const deliveryId = (await Promise.all(message.deliveryIds.map((id) => s.delivery(id)))).find(
      (d) => d.endpoint_id === endpoints[i]!.id,
    )!.id;
    const read = await s.until(deliveryId, (d) => d.status === 'failed', `case ${i} fails`);
    assert.equal(read.attempts.length, 2, `case ${i}: both scheduled attempts made`);
    for (const attempt of read.attempts) {
      assert.equal(attempt.status, 'failed');
      assert.match(attempt.error!, /^transformation failed: /);
      assert.match(attempt.error!, c.error);
    }
  }
  assert.equal(receiver.received.length, 0, 'nothing was sent');
});

test("an endpoint whose code spins to its deadline does not hold other endpoints' attempts", async (t) => {
  // A long deadline, so that the spinning run is still under way while the others are delivered.
  const s = await setup(t, { HERALD_TRANSFORMATION_TIMEOUT: '3s', HERALD_RETRY_SCHEDULE: '0s' });
  const receiver = await startReceiver(t);
  const spinner = await s.endpoint(`${receiver.url}/spin`, {
    transformation: { code: 'function handler(w) { for (;;) {} }' },
  });
  await s.endpoint(`${receiver.url}/plain`);
  await s.endpoint(`${receiver.url}/shaped`, {
    transformation: { code: 'function handler(w) { w.headers["x-shaped"] = "yes"; return w; }' },
  });
  const first = await s.emit({ n: 1 });
  const spinDelivery = (await Promise.all(first.deliveryIds.map((id) => s.delivery(id)))).find(
    (d) => d.endpoint_id === spinner.id,
  )!.id;
  // More messages while the spinner's first run holds its thread: the others arrive before it ends.
  for (let n = 2; n <= 5; n++) await s.emit({ n });
  await receiver.waitFor(10, 2_500);
  const spin = await s.delivery(spinDelivery);
  assert.equal(spin.attempts.length, 0, "the spinner's first run was still under way");
  assert.equal(receiver.received.filter((r) => r.path === '/shaped' && r.headers['x-shaped'] === 'yes').length, 5);
  assert.equal(receiver.received.filter((r) => r.path === '/plain').length, 5);
  const failed = await s.until(spinDelivery, (d) => d.attempts.length >= 1, 'the spinner fails', 15_000);
  assert.match(failed.attempts[0]!.error!, /deadline of 3000 ms exceeded/);
});

test("code stuck where no deadline reaches fails only its own attempts: other endpoints' runs go again on a new thread", async (t) => {
  // One thread, so the stuck runs share turns with the other endpoint's runs.
  const s = await setup(t, {
    HERALD_TRANSFORMATION_TIMEOUT: '300ms',
    HERALD_TRANSFORMATION_THREADS: '1',
    HERALD_RETRY_SCHEDULE: '0s',
  });
  const receiver = await startReceiver(t);
  // Joining a billion holes runs in QuickJS's C code, which checks no deadline and grows no memory.
  const stuck = await s.endpoint(`${receiver.url}/stuck`, {
    transformation: { code: 'function handler(w) { new Array(1e9).join(""); return w; }' },
  });
  await s.endpoint(`${receiver.url}/shaped`, {
    transformation: { code: 'function handler(w) { w.headers["x-shaped"] = "yes"; return w; }' },
  });
  const ids: string[] = [];
  for (let n = 1; n <= 3; n++) ids.push(...(await s.emit({ n })).deliveryIds);
  const reads = await Promise.all(ids.map((id) => s.delivery(id)));
  const shaped = reads.filter((d) => d.endpoint_id !== stuck.id).map((d) => d.id);
  for (const id of shaped) {
    const read = await s.until(id, (d) => d.status === 'success', 'the shaped delivery arrives', 20_000);
    assert.deepEqual(
      read.attempts.map((a) => a.status),
      ['success'],
      'its one attempt succeeded: no run of it failed with the stuck thread',
    );
  }
  assert.equal(receiver.received.filter((r) => r.path === '/shaped' && r.headers['x-shaped'] === 'yes').length, 3);
  const stuckId = reads.find((d) => d.endpoint_id === stuck.id)!.id;
  const failed = await s.until(stuckId, (d) => d.attempts.length >= 1, 'the stuck run fails', 20_000);
  assert.match(failed.attempts[0]!.error!, /deadline of 300 ms exceeded \(the run was stopped\)/);
  assert.equal(receiver.received.filter((r) => r.path === '/stuck').length, 0);
});

test('an attempt claimed before its code changed, that goes after its endpoint is read again, runs the new code', async (t) => {
  // One request at a time: the second delivery is claimed, and its transformation run, while the receiver
  // holds the first; the code changes meanwhile, and the second goes more than a second after its claim.
  const s = await setup(t, { ...ROOMY, HERALD_ENDPOINT_CONCURRENCY: '1' });
  let release!: () => void;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const receiver = await startReceiver(t, (r) =>
    r.body.includes('"n":1') ? { status: 200, until: held } : { status: 200 },
  );
  const versioned = (v: number) => `function handler(w) { w.headers["x-version"] = "${v}"; return w; }`;
  const endpoint = await s.endpoint(`${receiver.url}/hook`, { transformation: { code: versioned(1) } });
  const first = await s.emit({ n: 1 });
  await receiver.waitFor(1, 10_000);
  const second = await s.emit({ n: 2 });
  // Claimed beside the held request: the worker holds more than one attempt per endpoint slot.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const changed = await s.api.patch(`/api/v1/endpoints/${endpoint.id}`, { transformation: { code: versioned(2) } });
  assert.equal(changed.status, 200);
  await new Promise((resolve) => setTimeout(resolve, 1_200));
  release();
  await s.until(first.deliveryIds[0]!, (d) => d.status === 'success', 'the first is delivered');
  await s.until(second.deliveryIds[0]!, (d) => d.status === 'success', 'the second is delivered');
  assert.deepEqual(
    receiver.received.map((r) => r.headers['x-version']),
    ['1', '2'],
  );
});

test('the native API takes, shows, changes and removes a transformation, and refuses bad code with a 400', async (t) => {
  const s = await setup(t, ROOMY);
  const receiver = await startReceiver(t);
  const created = await s.api.post('/api/v1/endpoints', {
    app_id: s.appId,
    url: `${receiver.url}/hook`,
    transformation: { code: RESHAPE },
  });
  assert.equal(created.status, 201);
  assert.equal(created.body.transformation.code, RESHAPE);
  assert.equal(created.body.transformation.enabled, true);
  assert.ok(Date.parse(created.body.transformation.updated_at) > 0);
  const id = created.body.id;

  const disabled = await s.api.patch(`/api/v1/endpoints/${id}`, { transformation: { enabled: false } });
  assert.equal(disabled.status, 200);
  assert.deepEqual([disabled.body.transformation.code, disabled.body.transformation.enabled], [RESHAPE, false]);
  // Disabled: the plain request goes.
  const message = await s.emit({ amount: 5 });
  await s.until(message.deliveryIds[0]!, (d) => d.status === 'success', 'delivered plain');
  assert.equal(receiver.received[0]!.method, 'POST');
  assert.equal(receiver.received[0]!.path, '/hook');

  for (const [body, words] of [
    [{ code: 'function handler(w) { return w;' }, /transformation\.code does not compile: threw SyntaxError/],
    [{ code: 'const x = 1;' }, /must define function handler/],
    [{ code: 'x'.repeat(64 * 1024 + 1) }, /code/],
    [{ code: 'function handler(w) { return w; }', extra: 1 }, /transformation/],
  ] as const) {
    const refused = await s.api.patch(`/api/v1/endpoints/${id}`, { transformation: body });
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    assert.match(refused.body.error.message, words);
  }
  // Nothing stored on a refusal.
  assert.equal((await s.api.get(`/api/v1/endpoints/${id}`)).body.transformation.code, RESHAPE);

  const removed = await s.api.patch(`/api/v1/endpoints/${id}`, { transformation: null });
  assert.equal(removed.body.transformation, null);
  const plain = await s.api.post('/api/v1/endpoints', { app_id: s.appId, url: `${receiver.url}/plain` });
  assert.equal(plain.body.transformation, null);
});

test('simulate answers the request the code would make, or a 400 with the error, sending nothing', async (t) => {
  const s = await setup(t, ROOMY);
  const receiver = await startReceiver(t);
  const endpoint = await s.endpoint(`${receiver.url}/hook`, { transformation: { code: RESHAPE } });
  const saved = await s.api.post(`/api/v1/endpoints/${endpoint.id}/transformation/simulate`, {
    payload: { amount: 7 },
    event_type: 'invoice.paid',
  });
  assert.equal(saved.status, 200, JSON.stringify(saved.body));
  assert.deepEqual(saved.body, {
    method: 'PUT',
    url: `${receiver.url}/hook/slack?kind=invoice.paid`,
    headers: { 'X-Kind': 'invoice.paid' },
    payload: { text: 'paid 7', original: 'invoice.paid' },
    cancel: false,
  });
  const draft = await s.api.post(`/api/v1/endpoints/${endpoint.id}/transformation/simulate`, {
    code: 'function handler(w) { w.cancel = true; return w; }',
    payload: {},
  });
  assert.equal(draft.body.cancel, true);
  const failing = await s.api.post(`/api/v1/endpoints/${endpoint.id}/transformation/simulate`, {
    code: 'function handler(w) { while (true) {} }',
    payload: {},
  });
  assert.equal(failing.status, 400);
  assert.match(failing.body.error.message, /^transformation failed: deadline of 1000 ms exceeded/);
  assert.equal(receiver.received.length, 0);
});

test('the svix SDK reads and changes a transformation (transformationGet, patchTransformation, transformationPartialUpdate)', async (t) => {
  const s = await setup(t, ROOMY);
  const receiver = await startReceiver(t);
  const svix = new Svix(s.api.key!, { serverUrl: s.service.url });
  const app = await svix.application.create({ name: 'Acme svix', uid: 'acme-svix' });
  const endpoint = await svix.endpoint.create(app.id, { url: `${receiver.url}/hook` });
  const none = await svix.endpoint.transformationGet(app.id, endpoint.id);
  assert.deepEqual([none.code, none.enabled], [null, false]);
  await svix.endpoint.patchTransformation(app.id, endpoint.id, { code: RESHAPE, enabled: true });
  const got = await svix.endpoint.transformationGet(app.id, endpoint.id);
  assert.deepEqual([got.code, got.enabled], [RESHAPE, true]);
  assert.ok(got.updatedAt instanceof Date);
  await svix.endpoint.transformationPartialUpdate(app.id, endpoint.id, { enabled: false });
  const off = await svix.endpoint.transformationGet(app.id, endpoint.id);
  assert.deepEqual([off.code, off.enabled], [RESHAPE, false]);
  await assert.rejects(
    svix.endpoint.patchTransformation(app.id, endpoint.id, { code: 'function nope(' }),
    (error: { code?: number }) => error.code === 422 || error.code === 400,
  );
  // Enabled again through the SDK, a message sent through it is reshaped.
  await svix.endpoint.patchTransformation(app.id, endpoint.id, { enabled: true });
  await svix.message.create(app.id, { eventType: 'invoice.paid', payload: { amount: 3 } });
  await eventually(async () => receiver.received.length === 1, 15_000, 'the reshaped message arrives');
  assert.equal(receiver.received[0]!.method, 'PUT');
  assert.deepEqual(JSON.parse(receiver.received[0]!.body), { text: 'paid 3', original: 'invoice.paid' });
});

test("the API's checks and simulations and the worker's runs use the process's one pool of threads", async (t) => {
  // One thread a pool: a second pool in the process would be a second thread.
  const seen = watchSandboxCalls(t);
  const s = await setup(t, { ...ROOMY, HERALD_TRANSFORMATION_THREADS: '1' });
  const receiver = await startReceiver(t);
  const posted = () => seen.withCode + seen.without;
  let runs = posted();
  const endpoint = await s.endpoint(`${receiver.url}/hook`, { transformation: { code: RESHAPE } });
  assert.ok(posted() > runs, "the API's compile check went to a sandbox thread");
  runs = posted();
  const message = await s.emit({ amount: 3 });
  await s.until(message.deliveryIds[0]!, (d) => d.status === 'success', 'delivered');
  assert.ok(posted() > runs, "the worker's run went to a sandbox thread");
  runs = posted();
  const simulated = await s.api.post(`/api/v1/endpoints/${endpoint.id}/transformation/simulate`, { payload: {} });
  assert.equal(simulated.status, 200, JSON.stringify(simulated.body));
  assert.ok(posted() > runs, 'simulate went to a sandbox thread');
  assert.equal(seen.threads.size, 1, 'all three went to the one pool');
});
