import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiException, MessageStatus, StatusCodeClass, Svix, Webhook } from 'svix';
import { setup, startReceiver } from '../../support/delivery.js';
import { eventually, type Received, type Receiver } from '../../support/receiver.js';
import { purgeExpired } from '../../../src/store/retention.js';

// The official `svix` SDK, pointed at a real Herald by `serverUrl` alone, drives the Svix-compatible
// surface (src/api/svix/) through the flow a team moving from Svix runs, against a real receiver that
// verifies what it gets with the SDK's own Webhook class.

const svixHeaders = (r: Received) => ({
  'svix-id': String(r.headers['svix-id']),
  'svix-timestamp': String(r.headers['svix-timestamp']),
  'svix-signature': String(r.headers['svix-signature']),
});
const webhookHeaders = (r: Received) => ({
  'webhook-id': String(r.headers['webhook-id']),
  'webhook-timestamp': String(r.headers['webhook-timestamp']),
  'webhook-signature': String(r.headers['webhook-signature']),
});

/** The `n`-th request that reached `path`, once it has. */
const arrival = (receiver: Receiver, path: string, n: number) =>
  eventually(async () => receiver.received.filter((r) => r.path === path)[n - 1], 10_000, `request ${n} at ${path}`);

/** Every SDK method the issue names, by resource: the suite must call each one. */
const NAMED: Record<string, string[]> = {
  application: ['list', 'create', 'getOrCreate', 'get', 'update', 'patch', 'delete'],
  endpoint: [
    'list',
    'create',
    'get',
    'update',
    'patch',
    'delete',
    'getSecret',
    'rotateSecret',
    'getHeaders',
    'updateHeaders',
    'patchHeaders',
    'getStats',
    'recover',
    'replayMissing',
    'bulkReplay',
    'sendExample',
  ],
  message: ['list', 'create', 'get', 'expungeContent'],
  messageAttempt: [
    'listByEndpoint',
    'listByMsg',
    'get',
    'listAttemptedMessages',
    'listAttemptedDestinations',
    'resend',
  ],
  eventType: ['list', 'create', 'get', 'update', 'patch', 'delete'],
  backgroundTask: ['list', 'get'],
  authentication: ['appPortalAccess'],
  operationalWebhookEndpoint: [
    'list',
    'create',
    'get',
    'update',
    'delete',
    'getSecret',
    'rotateSecret',
    'getHeaders',
    'updateHeaders',
  ],
  health: ['get'],
};
const called = new Set<string>();

/** A Svix client whose named resources record each method called on them. */
function recordingClient(key: string, serverUrl: string): Svix {
  const svix = new Svix(key, { serverUrl });
  return new Proxy(svix, {
    get(target, resource: string) {
      const value = Reflect.get(target, resource);
      if (!(resource in NAMED) || typeof value !== 'object' || value === null) return value;
      return new Proxy(value, {
        get(object, method: string) {
          const fn = Reflect.get(object, method);
          if (typeof fn !== 'function') return fn;
          return (...args: unknown[]) => {
            called.add(`${resource}.${method}`);
            return fn.apply(object, args);
          };
        },
      });
    },
  });
}

/** The ApiException a call raises, or a failure when it does not raise one. */
async function refusal(call: Promise<unknown>): Promise<ApiException<any>> {
  try {
    await call;
  } catch (error) {
    if (error instanceof ApiException) return error;
    throw error;
  }
  assert.fail('the call succeeded');
}

test('a team moving from Svix changes only serverUrl', { timeout: 120_000 }, async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s,200ms,400ms' });
  const receiver = await startReceiver(t);
  const svix = recordingClient(s.api.key!, s.service.url);

  // Applications: one set of objects with the native API.
  const created = await svix.application.create({ name: 'Shop', uid: 'shop-1', metadata: { plan: 'pro' } });
  assert.match(created.id, /^app_/);
  assert.equal(created.uid, 'shop-1');
  assert.deepEqual(created.metadata, { plan: 'pro' });
  assert.ok(created.createdAt instanceof Date);
  const native = await s.api.get(`/api/v1/applications/${created.id}`);
  assert.equal(native.status, 200);
  assert.equal(native.body.name, 'Shop');
  assert.equal((await svix.application.get(s.appId)).id, s.appId, 'a native application through the Svix surface');
  assert.equal((await svix.application.getOrCreate({ name: 'Other', uid: 'shop-1' })).id, created.id);
  assert.equal((await svix.application.patch('shop-1', { name: 'Shop 2' })).name, 'Shop 2');
  const updated = await svix.application.update('shop-1', { name: 'Shop 3' });
  assert.equal(updated.name, 'Shop 3');
  assert.deepEqual(updated.metadata, {}, 'PUT sets every field');
  const missing = await refusal(svix.application.get('nope'));
  assert.equal(missing.code, 404);
  assert.equal(missing.body.code, 'not_found');
  const taken = await refusal(svix.application.create({ name: 'Again', uid: 'shop-1' }));
  assert.equal(taken.code, 409);
  const invalid = await refusal(svix.application.create({ name: '' }));
  assert.equal(invalid.code, 422);
  assert.deepEqual(invalid.body.detail[0].loc, ['body', 'name']);

  // Endpoint with a supplied secret; the receiver verifies both header sets with the SDK's Webhook.
  const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
  const endpoint = await svix.endpoint.create('shop-1', {
    url: `${receiver.url}/shop`,
    uid: 'ep-main',
    filterTypes: ['invoice.paid'],
    secret,
    metadata: { team: 'billing' },
  });
  assert.equal(endpoint.uid, 'ep-main');
  const short = await refusal(svix.endpoint.create('shop-1', { url: `${receiver.url}/x`, secret: 'whsec_c2hvcnQ=' }));
  assert.equal(short.code, 422, 'a secret of fewer than 24 bytes');
  assert.match(short.body.detail[0].msg, /24 to 64 bytes/);
  assert.deepEqual(endpoint.filterTypes, ['invoice.paid']);
  assert.equal((await svix.endpoint.getSecret('shop-1', 'ep-main')).key, secret);
  assert.equal((await svix.endpoint.get('shop-1', endpoint.id)).url, `${receiver.url}/shop`);

  const message = await svix.message.create('shop-1', { eventType: 'invoice.paid', payload: { amount: 10 } });
  assert.match(message.id, /^evt_/);
  assert.deepEqual(message.payload, { amount: 10 });
  const got = await arrival(receiver, '/shop', 1);
  const wh = new Webhook(secret);
  assert.deepEqual((wh.verify(got.body, svixHeaders(got)) as any).data, { amount: 10 });
  assert.deepEqual((wh.verify(got.body, webhookHeaders(got)) as any).data, { amount: 10 });
  assert.equal(got.headers['svix-id'], message.id);

  // Reading back what happened.
  const attempts = await eventually(
    async () => {
      const page = await svix.messageAttempt.listByMsg('shop-1', message.id);
      return page.data.length > 0 ? page : undefined;
    },
    10_000,
    'an attempt',
  );
  const [attempt] = attempts.data;
  assert.equal(attempt!.status, 0);
  assert.equal(attempt!.endpointId, endpoint.id);
  assert.equal(attempt!.response, '', 'lists leave the answer out');
  const one = await svix.messageAttempt.get('shop-1', message.id, attempt!.id);
  assert.equal(one.responseStatusCode, 200);
  assert.equal((await svix.messageAttempt.listByEndpoint('shop-1', 'ep-main')).data[0]!.id, attempt!.id);
  const destinations = await svix.messageAttempt.listAttemptedDestinations('shop-1', message.id);
  assert.deepEqual(
    destinations.data.map((d) => [d.id, d.statusText]),
    [[endpoint.id, 'success']],
  );
  const sent = await svix.messageAttempt.listAttemptedMessages('shop-1', 'ep-main');
  assert.deepEqual(
    sent.data.map((m) => [m.id, m.status]),
    [[message.id, 0]],
  );
  assert.deepEqual((await svix.message.get('shop-1', message.id)).payload, { amount: 10 });

  // Resend, then rotate and verify with the new secret.
  await svix.messageAttempt.resend('shop-1', message.id, 'ep-main');
  await arrival(receiver, '/shop', 2);
  await svix.endpoint.rotateSecret('shop-1', 'ep-main', {});
  const rotated = (await svix.endpoint.getSecret('shop-1', 'ep-main')).key;
  assert.notEqual(rotated, secret);
  await svix.message.create('shop-1', { eventType: 'invoice.paid', payload: { amount: 20 } });
  const third = await arrival(receiver, '/shop', 3);
  assert.deepEqual((new Webhook(rotated).verify(third.body, svixHeaders(third)) as any).data, { amount: 20 });

  // A native endpoint keeps the Standard names only.
  await s.endpoint(`${receiver.url}/native`);
  await s.emit({ n: 1 });
  const plain = await arrival(receiver, '/native', 1);
  assert.equal(plain.headers['svix-id'], undefined);
  assert.ok(plain.headers['webhook-id']);

  await svix.endpoint.delete('shop-1', 'ep-main');
  assert.equal((await refusal(svix.endpoint.get('shop-1', 'ep-main'))).code, 404);
  await svix.application.delete('shop-1');
  assert.equal((await s.api.get(`/api/v1/applications/${created.id}`)).status, 404);
});

test('the rest of the surface: event types, stats, headers, recover and replay, examples, portal links, operational webhooks', {
  timeout: 120_000,
}, async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s,200ms,400ms' });
  const receiver = await startReceiver(t);
  const svix = recordingClient(s.api.key!, s.service.url);
  await svix.health.get();

  // Event types: schemas as Svix versions them; delete archives, expunge removes.
  const schema = {
    type: 'object',
    properties: { sku: { type: 'string' } },
    required: ['sku'],
    examples: [{ sku: 'A-1' }, { sku: 'B-2' }],
  };
  const type = await svix.eventType.create({ name: 'order.shipped', description: 'Shipped', schemas: { '1': schema } });
  assert.deepEqual(type.schemas, { '1': schema });
  assert.equal(type.archived, false);
  assert.equal((await svix.eventType.get('order.shipped')).description, 'Shipped');
  assert.equal((await svix.eventType.patch('order.shipped', { deprecated: true })).deprecated, true);
  const put = await svix.eventType.update('order.shipped', { description: 'Sent', schemas: { '1': schema } });
  assert.equal(put.description, 'Sent');
  assert.equal(put.deprecated, false, 'PUT sets every field');
  assert.equal((await refusal(svix.eventType.create({ name: 'order.shipped', description: 'x' }))).code, 409);
  // A starter type a team moving from Svix creates again: the 409 says the catalog holds it, and what to call.
  const starter = await refusal(svix.eventType.create({ name: 'invoice.paid', description: 'Paid' }));
  assert.equal(starter.code, 409);
  assert.match(JSON.stringify(starter.body), /a new environment's catalog holds invoice\.paid.*update it with PUT/);
  const names = async (options = {}) => (await svix.eventType.list({ limit: 250, ...options })).data.map((e) => e.name);
  assert.ok((await names()).includes('order.shipped'));

  // A payload its schema refuses is Svix's 422; one it accepts goes out.
  const app = await svix.application.create({ name: 'Store', uid: 'store' });
  const bad = await refusal(svix.message.create('store', { eventType: 'order.shipped', payload: { sku: 1 } }));
  assert.equal(bad.code, 422);
  const endpoint = await svix.endpoint.create('store', { url: `${receiver.url}/store`, uid: 'main' });
  const secret = (await svix.endpoint.getSecret('store', 'main')).key;

  // Headers: replace, patch (set and delete), sensitive ones named and never shown.
  await svix.endpoint.updateHeaders('store', 'main', { headers: { 'X-Team': 'a', Authorization: 'Bearer s3cret' } });
  await svix.endpoint.patchHeaders('store', 'main', { headers: { 'X-Extra': 'b' }, deleteHeaders: ['X-Team'] });
  const headers = await svix.endpoint.getHeaders('store', 'main');
  assert.deepEqual(headers.headers, { 'X-Extra': 'b' });
  assert.deepEqual(headers.sensitive, ['Authorization']);

  // send-example: the schema's example at the index, to this endpoint only.
  const other = await svix.endpoint.create('store', { url: `${receiver.url}/other` });
  const example = await svix.endpoint.sendExample('store', 'main', { eventType: 'order.shipped', exampleIndex: 1 });
  assert.deepEqual(example.payload, { sku: 'B-2' });
  const sent = await arrival(receiver, '/store', 1);
  assert.equal(sent.headers.authorization, 'Bearer s3cret');
  assert.equal(sent.headers['x-extra'], 'b');
  assert.deepEqual((new Webhook(secret).verify(sent.body, svixHeaders(sent)) as any).data, { sku: 'B-2' });
  assert.equal(receiver.received.filter((r) => r.path === '/other').length, 0, 'only the endpoint asked');

  // Messages: pages with iterator and done; content left out on request; expunged content reads as {}.
  const ids: string[] = [];
  for (let i = 0; i < 5; i++)
    ids.push((await svix.message.create('store', { eventType: 'order.shipped', payload: { sku: `S-${i}` } })).id);
  const seen: string[] = [];
  let iterator: string | null | undefined;
  for (let pages = 0; pages < 10; pages++) {
    const page = await svix.message.list('store', { limit: 2, iterator, eventTypes: ['order.shipped'] });
    assert.ok(page.data.length <= 2);
    seen.push(...page.data.map((m) => m.id));
    if (page.done) break;
    iterator = page.iterator;
  }
  assert.deepEqual(seen.slice(0, 5), [...ids].reverse(), 'newest first, every one once');
  const bare = await svix.message.list('store', { limit: 1, withContent: false });
  assert.deepEqual(bare.data[0]!.payload, {});
  await svix.message.expungeContent('store', ids[0]!);
  assert.deepEqual((await svix.message.get('store', ids[0]!)).payload, {});

  // Stats count the endpoint's deliveries by state.
  await eventually(async () => (await svix.endpoint.getStats('store', 'main')).success >= 5, 10_000, 'deliveries');
  const stats = await svix.endpoint.getStats('store', 'main');
  assert.equal(stats.fail, 0);

  // Replay-missing: the messages made before an endpoint existed reach it in the background.
  const late = await svix.endpoint.create('store', { url: `${receiver.url}/late`, uid: 'late' });
  const replay = await svix.endpoint.replayMissing('store', 'late', { since: new Date(Date.now() - 60_000) });
  assert.equal(replay.task, 'endpoint.replay');
  await eventually(async () => (await svix.backgroundTask.get(replay.id)).status === 'finished', 10_000, 'replay');
  await eventually(async () => receiver.received.filter((r) => r.path === '/late').length >= 5, 10_000, 'replayed');
  const again = await svix.endpoint.replayMissing('store', 'late', { since: new Date(Date.now() - 60_000) });
  await eventually(async () => (await svix.backgroundTask.get(again.id)).status === 'finished', 10_000, 'replay 2');
  assert.equal((await svix.backgroundTask.get(again.id)).data.messagesQueued, 0, 'nothing sent twice');
  assert.ok((await svix.backgroundTask.list({ limit: 10 })).data.some((task) => task.id === replay.id));

  // Recover: a failing endpoint's deliveries get one more attempt once it answers again.
  let up = false;
  receiver.respond = (r) => ({ status: r.path === '/flaky' && !up ? 500 : 200 });
  const flaky = await svix.endpoint.create('store', { url: `${receiver.url}/flaky`, uid: 'flaky' });
  const failing = await svix.message.create('store', { eventType: 'order.shipped', payload: { sku: 'F' } });
  await eventually(
    async () =>
      (await svix.messageAttempt.listByMsg('store', failing.id, { status: 2, endpointId: 'flaky' })).data.length >= 3,
    10_000,
    'three failed attempts',
  );
  up = true;
  const recovery = await svix.endpoint.recover('store', 'flaky', { since: new Date(Date.now() - 60_000) });
  assert.equal(recovery.task, 'endpoint.recover');
  await eventually(
    async () =>
      (await svix.messageAttempt.listByMsg('store', failing.id, { status: 0, endpointId: flaky.id })).data.length === 1,
    10_000,
    'the recovery attempt',
  );

  // Bulk replay: the flaky endpoint's deliveries whose last answer was a 5xx get one more attempt (none is
  // left: the recovery delivered it), then those delivered (status 0) get theirs.
  const byClass = await svix.endpoint.bulkReplay('store', 'flaky', {
    since: new Date(Date.now() - 60_000),
    statusCodeClass: StatusCodeClass.Code5xx,
  });
  assert.equal(byClass.task, 'endpoint.bulk-replay');
  await eventually(async () => (await svix.backgroundTask.get(byClass.id)).status === 'finished', 10_000, 'bulk 1');
  assert.equal((await svix.backgroundTask.get(byClass.id)).data.messagesQueued, 0);
  const bulk = await svix.endpoint.bulkReplay('store', 'flaky', {
    since: new Date(Date.now() - 60_000),
    status: MessageStatus.Success,
    eventTypes: ['order.shipped'],
  });
  await eventually(async () => (await svix.backgroundTask.get(bulk.id)).status === 'finished', 10_000, 'bulk 2');
  assert.equal((await svix.backgroundTask.get(bulk.id)).data.messagesQueued, 1);
  await eventually(
    async () =>
      (await svix.messageAttempt.listByMsg('store', failing.id, { status: 0, endpointId: flaky.id })).data.length === 2,
    10_000,
    'the bulk replay attempt',
  );
  const pending = await refusal(
    svix.endpoint.bulkReplay('store', 'flaky', { since: new Date(), status: MessageStatus.Pending }),
  );
  assert.equal(pending.code, 422);

  // Endpoint update and patch; archive and expunge an event type.
  const patched = await svix.endpoint.patch('store', 'main', { description: 'Main', disabled: true });
  assert.equal(patched.disabled, true);
  const replaced = await svix.endpoint.update('store', 'main', { url: `${receiver.url}/store` });
  assert.equal(replaced.disabled, false, 'PUT enables');
  assert.equal(replaced.description, '');
  assert.deepEqual(
    (await svix.endpoint.list('store', { limit: 250 })).data.map((e) => e.id).sort(),
    [endpoint.id, other.id, late.id, flaky.id].sort(),
  );
  await svix.eventType.delete('order.shipped');
  assert.equal((await svix.eventType.get('order.shipped')).archived, true);
  assert.ok(!(await names()).includes('order.shipped'), 'archived ones are left out');
  assert.ok((await names({ includeArchived: true })).includes('order.shipped'));
  await svix.eventType.delete('order.shipped', { expunge: true });
  assert.equal((await refusal(svix.eventType.get('order.shipped'))).code, 404);

  // Portal links: each one opens the portal on its own, until it expires.
  const first = await svix.authentication.appPortalAccess('store', {});
  const second = await svix.authentication.appPortalAccess('store', { expiry: 1 });
  assert.notEqual(first.token, second.token);
  assert.equal((await fetch(first.url)).status, 200);
  assert.equal((await fetch(second.url)).status, 200);
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  assert.equal((await fetch(second.url)).status, 404, 'expired');
  assert.equal((await fetch(first.url)).status, 200);

  // Operational webhooks: Herald's own events, in Svix's shapes.
  const ops = await svix.operationalWebhookEndpoint.create({
    url: `${receiver.url}/ops`,
    filterTypes: ['endpoint.created'],
    uid: 'ops',
  });
  assert.deepEqual(ops.filterTypes, ['endpoint.created']);
  assert.equal((await svix.operationalWebhookEndpoint.get('ops')).id, ops.id);
  assert.deepEqual(
    (await svix.operationalWebhookEndpoint.list()).data.map((o) => o.id),
    [ops.id],
  );
  const opsSecret = (await svix.operationalWebhookEndpoint.getSecret('ops')).key;
  await svix.operationalWebhookEndpoint.updateHeaders('ops', { headers: { 'X-Ops': '1' } });
  assert.deepEqual((await svix.operationalWebhookEndpoint.getHeaders('ops')).headers, { 'X-Ops': '1' });
  await svix.endpoint.create('store', { url: `${receiver.url}/watched` });
  const event = await arrival(receiver, '/ops', 1);
  assert.equal(JSON.parse(event.body).type, 'endpoint.created');
  assert.ok(new Webhook(opsSecret).verify(event.body, svixHeaders(event)));
  await svix.operationalWebhookEndpoint.rotateSecret('ops', {});
  assert.notEqual((await svix.operationalWebhookEndpoint.getSecret('ops')).key, opsSecret);
  const bad2 = await refusal(
    svix.operationalWebhookEndpoint.update('ops', { url: `${receiver.url}/ops`, filterTypes: ['invoice.paid'] }),
  );
  assert.equal(bad2.code, 422);
  await svix.operationalWebhookEndpoint.update('ops', { url: `${receiver.url}/ops2` });
  await svix.operationalWebhookEndpoint.delete('ops');
  assert.equal((await refusal(svix.operationalWebhookEndpoint.get('ops'))).code, 404);

  // Idempotency: the same key answers as the first did, without making a second object.
  const key = `same-${Date.now()}`;
  const one = await svix.application.create({ name: 'Once' }, { idempotencyKey: key });
  const two = await svix.application.create({ name: 'Once' }, { idempotencyKey: key });
  assert.equal(two.id, one.id);
  const raw = await fetch(`${s.service.url}/api/v1/app`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.api.key}`, 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify({ name: 'Once' }),
  });
  assert.equal(raw.headers.get('idempotent-replayed'), 'true');
  const elsewhere = await refusal(svix.eventType.create({ name: 'x.y', description: '' }, { idempotencyKey: key }));
  assert.equal(elsewhere.code, 409, 'the key of another request');
  // A portal link is made on every call, whatever the key: its token is not kept.
  const links = [
    await svix.authentication.appPortalAccess('store', {}, { idempotencyKey: `${key}-portal` }),
    await svix.authentication.appPortalAccess('store', {}, { idempotencyKey: `${key}-portal` }),
  ];
  assert.notEqual(links[0]!.token, links[1]!.token);
  const all = (await svix.application.list({ limit: 250 })).data.filter((a) => a.name === 'Once');
  assert.equal(all.length, 1);
  assert.equal(app.uid, 'store');
});

test('every SDK method the issue names was called by this suite', () => {
  const missing = Object.entries(NAMED).flatMap(([resource, methods]) =>
    methods.map((method) => `${resource}.${method}`).filter((name) => !called.has(name)),
  );
  assert.deepEqual(missing, []);
});

test('the OpenAPI document lists the Svix-compatible routes under their own tags', async (t) => {
  const s = await setup(t);
  const doc = (await s.api.get('/api/v1/openapi.json')).body;
  const svixPaths = Object.entries(doc.paths as Record<string, Record<string, { tags?: string[] }>>).filter(([path]) =>
    /^\/api\/v1\/(app|event-type|background-task|operational-webhook|auth|health)(\/|$)/.test(path),
  );
  let count = 0;
  for (const [path, operations] of svixPaths)
    for (const [method, operation] of Object.entries(operations))
      assert.ok(
        operation.tags?.length === 1 && operation.tags[0]!.startsWith('svix: ') && ++count > 0,
        `${method} ${path}: ${operation.tags}`,
      );
  assert.equal(count, 53, 'every operation of the surface');
  // Native routes keep their own tags.
  assert.deepEqual(doc.paths['/api/v1/applications'].get.tags, ['applications']);
});

test('channels route on both surfaces, tags label, event ids are unique, payload retention is kept', {
  timeout: 120_000,
}, async (t) => {
  const s = await setup(t);
  const receiver = await startReceiver(t);
  const svix = recordingClient(s.api.key!, s.service.url);
  await svix.application.create({ name: 'Routes', uid: 'routes' });
  const eu = await svix.endpoint.create('routes', { url: `${receiver.url}/eu`, channels: ['eu'] });
  assert.deepEqual(eu.channels, ['eu']);
  await svix.endpoint.create('routes', { url: `${receiver.url}/us`, channels: ['us', 'global'] });
  await svix.endpoint.create('routes', { url: `${receiver.url}/all` });
  // Natively too: a native endpoint with channels, and its uid.
  const native = await s.api.post('/api/v1/endpoints', {
    app_id: 'routes',
    url: `${receiver.url}/native-eu`,
    channels: ['eu'],
    uid: 'native-eu',
  });
  assert.equal(native.status, 201, JSON.stringify(native.body));
  assert.deepEqual([native.body.uid, native.body.channels], ['native-eu', ['eu']]);
  assert.equal(
    (await s.api.post('/api/v1/endpoints', { app_id: 'routes', url: `${receiver.url}/x`, uid: 'native-eu' })).status,
    409,
  );

  const toEu = await svix.message.create('routes', {
    eventType: 'invoice.paid',
    payload: { n: 1 },
    channels: ['eu'],
    tags: ['vip'],
  });
  assert.deepEqual([toEu.channels, toEu.tags], [['eu'], ['vip']]);
  const toNone = await svix.message.create('routes', { eventType: 'invoice.paid', payload: { n: 2 } });
  const toGlobal = (
    await s.api.post('/api/v1/messages', {
      app_id: 'routes',
      event_type: 'invoice.paid',
      payload: { n: 3 },
      channels: ['global'],
      tags: ['batch'],
    })
  ).body;
  assert.deepEqual([toGlobal.channels, toGlobal.tags], [['global'], ['batch']]);
  const destinations = async (id: string) =>
    (await svix.messageAttempt.listAttemptedDestinations('routes', id)).data
      .map((e) => e.url.slice(receiver.url.length))
      .sort();
  assert.deepEqual(await destinations(toEu.id), ['/all', '/eu', '/native-eu']);
  assert.deepEqual(await destinations(toNone.id), ['/all'], 'a message without channels goes to endpoints without');
  assert.deepEqual(await destinations(toGlobal.id), ['/all', '/us']);
  await eventually(async () => receiver.received.length >= 6, 10_000, 'six deliveries');

  // Tags and channels filter lists, on both surfaces.
  assert.deepEqual(
    (await svix.message.list('routes', { tag: 'vip' })).data.map((m) => m.id),
    [toEu.id],
  );
  assert.deepEqual(
    (await svix.message.list('routes', { channel: 'global' })).data.map((m) => m.id),
    [toGlobal.id],
  );
  const byTag = await s.api.get('/api/v1/messages?tag=batch');
  assert.deepEqual(
    byTag.body.data.map((m: { id: string }) => m.id),
    [toGlobal.id],
  );
  assert.deepEqual((await s.api.get('/api/v1/messages?channel=e_')).body.data, [], 'names match whole, no wildcards');

  // An event id is the sender's: a repeat in the environment is 409; it names the message in reads.
  const first = await svix.message.create('routes', {
    eventType: 'invoice.paid',
    payload: { n: 4 },
    eventId: 'order-77',
  });
  assert.equal(first.eventId, 'order-77');
  assert.equal(
    (
      await refusal(
        svix.message.create('routes', { eventType: 'invoice.paid', payload: { n: 5 }, eventId: 'order-77' }),
      )
    ).code,
    409,
  );
  assert.equal((await svix.message.get('routes', 'order-77')).id, first.id);

  // `application` in the body makes the application the path names when there is none.
  const made = await svix.message.create('brand-new', {
    eventType: 'invoice.paid',
    payload: { n: 8 },
    application: { name: 'Brand new' },
  });
  const brandNew = await svix.application.get('brand-new');
  assert.equal(brandNew.name, 'Brand new');
  assert.equal((await svix.message.get('brand-new', made.id)).id, made.id);
  assert.equal((await refusal(svix.message.create('missing', { eventType: 'invoice.paid', payload: {} }))).code, 404);

  // A payload retention shorter than the environment's: the payload goes at the purge once delivered.
  const short = await svix.message.create('routes', {
    eventType: 'invoice.paid',
    payload: { n: 6 },
    payloadRetentionHours: 1,
  });
  const kept = await svix.message.create('routes', { eventType: 'invoice.paid', payload: { n: 7 } });
  await eventually(
    async () =>
      (await svix.messageAttempt.listByMsg('routes', kept.id)).data.length > 0 &&
      (await svix.messageAttempt.listByMsg('routes', short.id)).data.length > 0,
    10_000,
    'both delivered',
  );
  const store = s.service.store;
  await store.purgeExpired();
  assert.deepEqual((await svix.message.get('routes', short.id)).payload, { n: 6 }, 'not yet due');
  const later = { ...store.ctx, now: () => Date.now() + 2 * 3_600_000 };
  await purgeExpired(later, s.service.config);
  assert.deepEqual((await svix.message.get('routes', short.id)).payload, {}, 'gone when due');
  assert.deepEqual((await svix.message.get('routes', kept.id)).payload, { n: 7 });

  // deliverAt holds the message's attempts until then; reads show it; past the bound is refused.
  const deliverAt = new Date(Date.now() + 1500);
  const held = await svix.message.create('routes', { eventType: 'invoice.paid', payload: { n: 9 }, deliverAt });
  assert.equal(held.deliverAt?.toISOString(), deliverAt.toISOString());
  assert.equal((await svix.message.get('routes', held.id)).deliverAt?.toISOString(), deliverAt.toISOString());
  assert.equal(kept.deliverAt ?? null, null, 'none asked: none shown');
  const laterArrival = await eventually(
    async () => receiver.received.find((r) => (JSON.parse(r.body) as { data: { n: number } }).data.n === 9),
    10_000,
    'the held message',
  );
  assert.ok(laterArrival.at >= deliverAt.getTime(), 'not before deliverAt');
  const tooFar = await refusal(
    svix.message.create('routes', {
      eventType: 'invoice.paid',
      payload: { n: 10 },
      deliverAt: new Date(Date.now() + 8 * 86_400_000),
    }),
  );
  assert.equal(tooFar.code, 422);
  assert.match(JSON.stringify(tooFar.body), /deliverAt/);
});
