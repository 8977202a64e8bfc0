import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, Receiver, type Received } from '../../test/support/receiver.js';
import { Herald, HeraldError, Webhook, WebhookVerificationError } from '../src/index.js';
import { all, startWorld } from './helpers.js';

// Every method of the SDK against the real service and a real receiver: what each sends is what the
// route takes, what each answers is what the route answered, and the webhooks Herald sends verify.

/** The client, recording each method called as `resource.method` (or `method` for the client's own). */
function recording(herald: Herald, called: Set<string>): Herald {
  const bind = (target: object, prefix: string) =>
    new Proxy(target, {
      get(object, name) {
        const value = Reflect.get(object, name);
        if (typeof value === 'function') {
          called.add(`${prefix}${String(name)}`);
          return value.bind(object);
        }
        if (prefix === '' && value !== null && typeof value === 'object') return bind(value, `${String(name)}.`);
        return value;
      },
    });
  return bind(herald, '') as Herald;
}

/** Every method of the client and of each of its resources. */
function everyMethod(herald: Herald): string[] {
  const methods = (object: object) =>
    Object.getOwnPropertyNames(Object.getPrototypeOf(object)).filter((name) => name !== 'constructor');
  const resources = Object.entries(herald).filter(([name]) => name !== 'http');
  return [
    ...methods(herald),
    ...resources.flatMap(([resource, object]) => methods(object).map((name) => `${resource}.${name}`)),
  ].sort();
}

async function rejectsWith(promise: Promise<unknown>, status: number, code: string): Promise<HeraldError> {
  const error = await promise.then(
    () => assert.fail(`expected ${status} ${code}`),
    (error: unknown) => error,
  );
  assert.ok(error instanceof HeraldError, `not a HeraldError: ${error}`);
  assert.equal(error.status, status, error.message);
  assert.equal(error.code, code);
  assert.ok(error.message.length > 0);
  assert.match(error.request_id ?? '', /^req_/);
  return error;
}

test('every method of the SDK against the real service, with the webhooks it sends verified', async (t) => {
  // One attempt per delivery: the failing endpoint's delivery is `failed` at once, for recover.
  const world = await startWorld(t, { HERALD_RETRY_SCHEDULE: '0s' });
  const called = new Set<string>();
  const herald = recording(world.herald, called);
  const receiver = await new Receiver().start();
  t.after(() => receiver.stop());
  receiver.respond = (request) => (request.path === '/fail' ? { status: 500 } : { status: 200 });
  const arrivedAt = (path: string) => receiver.received.filter((request) => request.path === path);

  assert.deepEqual(await herald.health(), { status: 'ok' });
  const doc = await herald.openapi();
  assert.match(String(doc.openapi), /^3\./);

  // The event catalog.
  const created = await herald.eventTypes.create({
    name: 'order.created',
    description: 'An order was placed',
    example_json: { order: 'o_1' },
  });
  assert.equal(created.name, 'order.created');
  assert.equal(created.version, 1);
  const updated = await herald.eventTypes.update('order.created', { example_json: { order: 'o_2' } });
  assert.equal(updated.version, 2);
  assert.deepEqual((await herald.eventTypes.get('order.created')).example_json, { order: 'o_2' });
  assert.ok((await all(herald.eventTypes.list({ limit: 1 }))).some((entry) => entry.name === 'order.created'));

  // Applications, by id and by uid.
  const app = await herald.applications.create({ name: 'Acme', uid: 'acme' });
  assert.match(app.id, /^app_/);
  assert.equal(typeof app.portal_path, 'string');
  assert.equal((await herald.applications.get('acme')).id, app.id);
  assert.equal((await herald.applications.update(app.id, { name: 'Acme Inc' })).name, 'Acme Inc');
  assert.deepEqual(
    (await all(herald.applications.list())).map((listed) => listed.id),
    [app.id],
  );
  const rotatedPortal = await herald.applications.rotatePortalPath(app.id);
  assert.notEqual(rotatedPortal.portal_path, app.portal_path);
  await rejectsWith(herald.applications.create({ name: 'Again', uid: 'acme' }), 409, 'conflict');

  // Endpoints: one signing with an HMAC secret, one with an Ed25519 key.
  const hmac = await herald.endpoints.create({ app_id: app.id, url: `${receiver.url}/hmac` });
  assert.match(hmac.signing_secret ?? '', /^whsec_/);
  const ed = await herald.endpoints.create({ app_id: app.id, url: `${receiver.url}/ed`, signature_type: 'ed25519' });
  assert.match(ed.public_key ?? '', /^whpk_/);
  assert.equal((await herald.endpoints.get(ed.id)).signature_type, 'ed25519');
  assert.equal((await herald.endpoints.update(hmac.id, { description: 'orders' })).description, 'orders');
  assert.deepEqual(
    (await all(herald.endpoints.list({ app_id: app.id, limit: 1 }))).map((endpoint) => endpoint.id).sort(),
    [hmac.id, ed.id].sort(),
  );

  // Emit, deduped by the key given.
  const payload = { order: 'o_1', amount: 4200 };
  const message = await herald.messages.create(
    { app_id: app.id, event_type: 'order.created', payload },
    { idempotencyKey: 'order-1' },
  );
  assert.equal(message.idempotent, false);
  assert.equal(message.delivery_ids.length, 2);
  const again = await herald.messages.create(
    { app_id: app.id, event_type: 'order.created', payload },
    { idempotencyKey: 'order-1' },
  );
  assert.equal(again.idempotent, true);
  assert.equal(again.id, message.id);
  assert.deepEqual(again.delivery_ids, message.delivery_ids);

  // What Herald sent verifies with each endpoint's key, and not with the other's.
  await eventually(async () => arrivedAt('/hmac').length >= 1 && arrivedAt('/ed').length >= 1, 10_000, 'deliveries');
  const [toHmac] = arrivedAt('/hmac') as [Received];
  const [toEd] = arrivedAt('/ed') as [Received];
  const expected = { type: 'order.created', data: payload };
  assert.deepEqual(pick(await new Webhook(hmac.signing_secret!).verify(toHmac.body, toHmac.headers)), expected);
  assert.deepEqual(pick(await new Webhook(ed.public_key!).verify(toEd.body, toEd.headers)), expected);
  await assert.rejects(new Webhook(ed.public_key!).verify(toHmac.body, toHmac.headers), WebhookVerificationError);
  await assert.rejects(new Webhook(hmac.signing_secret!).verify(toEd.body, toEd.headers), WebhookVerificationError);

  // Messages, read and listed through every page, newest first.
  const more = [];
  for (let n = 0; n < 3; n++)
    more.push(await herald.messages.create({ app_id: app.id, event_type: 'order.created', payload: { n } }));
  assert.ok(
    more.every((emitted) => !emitted.idempotent),
    'emits without a key are three messages',
  );
  const listed = await all(herald.messages.list({ app_id: app.id, limit: 2 }));
  assert.deepEqual(
    listed.map((listedMessage) => listedMessage.id),
    [...more.map((emitted) => emitted.id).reverse(), message.id],
  );
  const firstPage = await herald.messages.list({ app_id: app.id, limit: 2 }).page();
  assert.equal(firstPage.data.length, 2);
  assert.equal(firstPage.has_more, true);
  assert.equal((await herald.messages.get(message.id)).event_type, 'order.created');
  await rejectsWith(herald.messages.get('evt_doesnotexist'), 404, 'not_found');
  const stored = await herald.messages.payload(message.id);
  assert.deepEqual(stored.payload, payload);
  assert.equal(stored.event_type, 'order.created');
  await rejectsWith(herald.messages.payload('evt_doesnotexist'), 404, 'not_found');

  // Deliveries: listed, read with attempts, retried.
  const ofMessage = await all(herald.messages.deliveries(message.id));
  assert.deepEqual(ofMessage.map((delivery) => delivery.id).sort(), [...message.delivery_ids].sort());
  assert.deepEqual(
    (await all(herald.deliveries.list({ message_id: message.id }))).map((delivery) => delivery.id).sort(),
    [...message.delivery_ids].sort(),
  );
  const deliveryId = message.delivery_ids[0]!;
  const delivered = await eventually(async () => {
    const delivery = await herald.deliveries.get(deliveryId);
    return delivery.status === 'success' ? delivery : null;
  });
  assert.equal(delivered.attempts[0]?.response_status, 200);
  const retried = await herald.deliveries.retry(deliveryId);
  assert.deepEqual(retried, { delivery_id: deliveryId, status: 'enqueued', attempt_number: 2 });

  const replayed = await herald.messages.replay(message.id);
  assert.equal(replayed.delivery_ids.length, 2);
  assert.ok(replayed.delivery_ids.every((id) => !message.delivery_ids.includes(id)));
  const sample = await herald.messages.sendTest({ app_id: app.id, event_type: 'order.created' });
  assert.equal(sample.status, 'accepted');

  // After a rotation both secrets sign, and either verifies.
  const rotated = await herald.endpoints.rotateSecret(hmac.id);
  assert.notEqual(rotated.signing_secret, hmac.signing_secret);
  const afterRotation = await herald.messages.create({ app_id: app.id, event_type: 'order.created', payload: {} });
  const rotatedRequest = await eventually(async () =>
    arrivedAt('/hmac').find((request) => request.headers['webhook-id'] === afterRotation.id),
  );
  assert.equal(String(rotatedRequest.headers['webhook-signature']).split(' ').length, 2);
  for (const secret of [hmac.signing_secret!, rotated.signing_secret!])
    await new Webhook(secret).verify(rotatedRequest.body, rotatedRequest.headers);

  // Operational endpoints hear of endpoint changes, signed with their own secret.
  const ops = await herald.operationalEndpoints.create({
    url: `${receiver.url}/ops`,
    event_types: ['endpoint.created'],
  });
  assert.match(ops.signing_secret!, /^whsec_/);
  assert.deepEqual(
    (await all(herald.operationalEndpoints.list())).map((listed) => listed.id),
    [ops.id],
  );
  // Recovering a failing endpoint's deliveries, followed as a background task.
  const failing = await herald.endpoints.create({ app_id: app.id, url: `${receiver.url}/fail` });
  const since = new Date(Date.now() - 60_000).toISOString();
  const doomed = await herald.messages.create({ app_id: app.id, event_type: 'order.created', payload: {} });
  const doomedDelivery = (await all(herald.deliveries.list({ message_id: doomed.id, endpoint_id: failing.id })))[0]!;
  await eventually(async () => (await herald.deliveries.get(doomedDelivery.id)).status === 'failed');
  const task = await herald.endpoints.recover(failing.id, { since });
  assert.equal(task.kind, 'endpoint.recover');
  const finished = await eventually(async () => {
    const read = await herald.backgroundTasks.get(task.id);
    return read.status === 'finished' ? read : null;
  });
  assert.equal(finished.data.deliveries_enqueued, 1);
  await eventually(async () => arrivedAt('/fail').length >= 2, 10_000, 'the recovered attempt');

  // The failing endpoint's creation reached the operational endpoint; its failed attempts are in its stats.
  const announced = await eventually(async () =>
    arrivedAt('/ops').find((request) => request.body.includes(failing.id)),
  );
  const event = (await new Webhook(ops.signing_secret!).verify(announced.body, announced.headers)) as {
    type: string;
    data: { endpoint_id: string };
  };
  assert.deepEqual([event.type, event.data.endpoint_id], ['endpoint.created', failing.id]);
  const stats = await eventually(async () => {
    const read = await herald.endpoints.stats(failing.id);
    return read.totals.failure >= 2 ? read : null;
  });
  assert.equal(stats.totals.success, 0);
  assert.equal(
    stats.buckets.reduce((sum, bucket) => sum + bucket.failure, 0),
    stats.totals.failure,
  );
  // The application's stats count the same attempts, by event type.
  const byType = await herald.applications.stats(app.id);
  assert.ok(byType.totals.failure >= stats.totals.failure);
  assert.equal(
    byType.event_types.reduce((sum, type) => sum + type.failure, byType.other.failure),
    byType.totals.failure,
  );
  const renamed = await herald.operationalEndpoints.update(ops.id, { description: 'Pager', status: 'disabled' });
  assert.deepEqual([renamed.description, renamed.status], ['Pager', 'disabled']);
  assert.equal(await herald.operationalEndpoints.delete(ops.id), undefined);
  assert.deepEqual(await all(herald.operationalEndpoints.list()), []);

  // API keys: a new one works until it is revoked.
  const key = await herald.apiKeys.create({ name: 'ci' });
  assert.match(key.key, /^sk_test_/);
  const withNewKey = new Herald({ baseUrl: world.service.url, apiKey: key.key });
  assert.equal((await withNewKey.applications.get(app.id)).id, app.id);
  assert.ok((await all(herald.apiKeys.list())).some((listedKey) => listedKey.id === key.id));
  const revoked = await herald.apiKeys.revoke(key.id);
  assert.equal(typeof revoked.revoked_at, 'string');
  await rejectsWith(withNewKey.applications.get(app.id), 401, 'unauthorized');

  // Deleting.
  assert.equal(await herald.endpoints.delete(ed.id), undefined);
  await rejectsWith(herald.endpoints.get(ed.id), 404, 'not_found');
  assert.equal(await herald.applications.delete(app.id), undefined);
  await rejectsWith(herald.applications.get(app.id), 404, 'not_found');

  assert.deepEqual([...called].sort(), everyMethod(world.herald), 'every method was called');
});

test('a Live key acts on Live: send-test is refused with 403 test_mode_only', async (t) => {
  const world = await startWorld(t, { HERALD_ROLE: 'api' });
  const live = new Herald({ baseUrl: world.service.url, apiKey: world.liveKey });
  const app = await live.applications.create({ name: 'Live app' });
  await rejectsWith(live.messages.sendTest({ app_id: app.id }), 403, 'test_mode_only');
  await rejectsWith(world.herald.applications.get(app.id), 404, 'not_found');
});

test('a client needs an API key', () => {
  assert.throws(() => new Herald({ apiKey: '' }), /apiKey is required/);
});

/** The fields of a verified event a test compares (its timestamp is the message's). */
function pick(event: unknown): { type: unknown; data: unknown } {
  const { type, data } = event as { type: unknown; data: unknown };
  return { type, data };
}
