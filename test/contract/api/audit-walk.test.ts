import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, type Client, type Reply } from '../../support/client.js';
import { PUBLIC_ROUTES } from '../../support/api.js';
import { eventually, Receiver } from '../../support/receiver.js';
import { purgeExpired } from '../../../src/store/retention.js';

// The audit log (decisions.md, Fourth wave, Access), walked over the OpenAPI document: every operation that
// changes something is made once, in this table's order, and a change of configuration must leave exactly
// one entry with the action named here, by the calling key, with the request's id and no secret in it;
// what is not configuration (emits, replays, retries, recoveries, simulations) leaves none. An operation
// the table does not name fails the walk.

interface World {
  appId: string;
  endpointId: string;
  messageId: string;
  deliveryId: string;
  taskId: string;
  operationalId: string;
  keyId: string;
  svixAppId: string;
  svixEndpointId: string;
  svixOperationalId: string;
  [name: string]: string;
}

type Step = [operation: string, path: (w: World) => string, body: (w: World) => unknown, action: string | null];

const since = () => new Date(Date.now() - 3_600_000).toISOString();
const SECRET_HEADER = 'hdr-value-never-shown-0123456789';

const STEPS: Step[] = [
  [
    'POST /api/v1/applications',
    () => '/api/v1/applications',
    () => ({ name: 'Audited', uid: 'audited' }),
    'application.created',
  ],
  [
    'PATCH /api/v1/applications/{id}',
    (w) => `/api/v1/applications/${w.appId}`,
    () => ({ name: 'Audited 2' }),
    'application.updated',
  ],
  [
    'POST /api/v1/applications/{id}/rotate-portal-path',
    (w) => `/api/v1/applications/${w.appId}/rotate-portal-path`,
    () => undefined,
    'application.portal_rotated',
  ],
  [
    'POST /api/v1/endpoints',
    () => '/api/v1/endpoints',
    (w) => ({
      app_id: w.appId,
      url: w.receiver,
      headers: { 'X-Api-Token': SECRET_HEADER },
      sensitive_headers: ['X-Api-Token'],
    }),
    'endpoint.created',
  ],
  [
    'PATCH /api/v1/endpoints/{id}',
    (w) => `/api/v1/endpoints/${w.endpointId}`,
    () => ({ description: 'changed', filter: { 'data.n': { $gte: 0 } } }),
    'endpoint.updated',
  ],
  [
    'POST /api/v1/endpoints/{id}/rotate-secret',
    (w) => `/api/v1/endpoints/${w.endpointId}/rotate-secret`,
    () => ({}),
    'endpoint.secret_rotated',
  ],
  [
    'POST /api/v1/endpoints/{id}/filter-test',
    (w) => `/api/v1/endpoints/${w.endpointId}/filter-test`,
    () => ({ payload: { n: 1 } }),
    null,
  ],
  [
    'POST /api/v1/endpoints/{id}/transformation/simulate',
    (w) => `/api/v1/endpoints/${w.endpointId}/transformation/simulate`,
    () => ({ code: 'function handler(w) { return w; }', payload: { n: 1 } }),
    null,
  ],
  [
    'POST /api/v1/messages',
    () => '/api/v1/messages',
    (w) => ({ app_id: w.appId, event_type: 'invoice.paid', payload: { n: 1 } }),
    null,
  ],
  ['POST /api/v1/messages/send-test', () => '/api/v1/messages/send-test', (w) => ({ app_id: w.appId }), null],
  ['POST /api/v1/messages/{id}/replay', (w) => `/api/v1/messages/${w.messageId}/replay`, () => ({}), null],
  ['POST /api/v1/deliveries/{id}/retry', (w) => `/api/v1/deliveries/${w.deliveryId}/retry`, () => ({}), null],
  [
    'POST /api/v1/endpoints/{id}/recover',
    (w) => `/api/v1/endpoints/${w.endpointId}/recover`,
    () => ({ since: since() }),
    null,
  ],
  ['POST /api/v1/background-tasks/{id}/cancel', (w) => `/api/v1/background-tasks/${w.taskId}/cancel`, () => ({}), null],
  [
    'POST /api/v1/endpoints/{id}/bulk-replay',
    (w) => `/api/v1/endpoints/${w.endpointId}/bulk-replay`,
    () => ({ since: since() }),
    null,
  ],
  [
    'POST /api/v1/event-types',
    () => '/api/v1/event-types',
    () => ({ name: 'audit.tested', description: 'first' }),
    'event_type.created',
  ],
  [
    'PATCH /api/v1/event-types/{name}',
    () => '/api/v1/event-types/audit.tested',
    () => ({ description: 'second' }),
    'event_type.updated',
  ],
  [
    'POST /api/v1/operational-endpoints',
    () => '/api/v1/operational-endpoints',
    () => ({ url: 'https://ops.example.com/hook' }),
    'operational_endpoint.created',
  ],
  [
    'PATCH /api/v1/operational-endpoints/{id}',
    (w) => `/api/v1/operational-endpoints/${w.operationalId}`,
    () => ({ description: 'pager' }),
    'operational_endpoint.updated',
  ],
  [
    'POST /api/v1/operational-endpoints/{id}/rotate-secret',
    (w) => `/api/v1/operational-endpoints/${w.operationalId}/rotate-secret`,
    () => ({}),
    'operational_endpoint.secret_rotated',
  ],
  [
    'DELETE /api/v1/operational-endpoints/{id}',
    (w) => `/api/v1/operational-endpoints/${w.operationalId}`,
    () => undefined,
    'operational_endpoint.deleted',
  ],
  [
    'POST /api/v1/api-keys',
    () => '/api/v1/api-keys',
    () => ({ name: 'audited key', role: 'reader' }),
    'api_key.created',
  ],
  ['DELETE /api/v1/api-keys/{id}', (w) => `/api/v1/api-keys/${w.keyId}`, () => undefined, 'api_key.revoked'],
  // The Svix-compatible surface.
  [
    'POST /api/v1/app',
    () => '/api/v1/app',
    () => ({ name: 'Svix audited', uid: 'svix-audited' }),
    'application.created',
  ],
  [
    'PUT /api/v1/app/{app_id}',
    (w) => `/api/v1/app/${w.svixAppId}`,
    () => ({ name: 'Svix audited 2', uid: 'svix-audited' }),
    'application.updated',
  ],
  [
    'PATCH /api/v1/app/{app_id}',
    (w) => `/api/v1/app/${w.svixAppId}`,
    () => ({ name: 'Svix audited 3' }),
    'application.updated',
  ],
  [
    'POST /api/v1/auth/app-portal-access/{app_id}',
    (w) => `/api/v1/auth/app-portal-access/${w.svixAppId}`,
    () => ({}),
    'portal_link.created',
  ],
  [
    'POST /api/v1/app/{app_id}/endpoint',
    (w) => `/api/v1/app/${w.svixAppId}/endpoint`,
    (w) => ({ url: w.receiver }),
    'endpoint.created',
  ],
  [
    'PUT /api/v1/app/{app_id}/endpoint/{endpoint_id}',
    (w) => `/api/v1/app/${w.svixAppId}/endpoint/${w.svixEndpointId}`,
    (w) => ({ url: w.receiver, description: 'put' }),
    'endpoint.updated',
  ],
  [
    'PATCH /api/v1/app/{app_id}/endpoint/{endpoint_id}',
    (w) => `/api/v1/app/${w.svixAppId}/endpoint/${w.svixEndpointId}`,
    () => ({ description: 'patched' }),
    'endpoint.updated',
  ],
  [
    'PATCH /api/v1/app/{app_id}/endpoint/{endpoint_id}/transformation',
    (w) => `/api/v1/app/${w.svixAppId}/endpoint/${w.svixEndpointId}/transformation`,
    () => ({ code: 'function handler(w) { return w; }', enabled: true }),
    'endpoint.updated',
  ],
  [
    'POST /api/v1/app/{app_id}/endpoint/{endpoint_id}/secret/rotate',
    (w) => `/api/v1/app/${w.svixAppId}/endpoint/${w.svixEndpointId}/secret/rotate`,
    () => ({}),
    'endpoint.secret_rotated',
  ],
  [
    'PUT /api/v1/app/{app_id}/endpoint/{endpoint_id}/headers',
    (w) => `/api/v1/app/${w.svixAppId}/endpoint/${w.svixEndpointId}/headers`,
    () => ({ headers: { 'X-Svix-Secret': SECRET_HEADER } }),
    'endpoint.updated',
  ],
  [
    'PATCH /api/v1/app/{app_id}/endpoint/{endpoint_id}/headers',
    (w) => `/api/v1/app/${w.svixAppId}/endpoint/${w.svixEndpointId}/headers`,
    () => ({ headers: { 'X-Other': 'one' } }),
    'endpoint.updated',
  ],
  [
    'POST /api/v1/app/{app_id}/msg',
    (w) => `/api/v1/app/${w.svixAppId}/msg`,
    () => ({ eventType: 'invoice.paid', payload: { n: 2 } }),
    null,
  ],
  [
    'POST /api/v1/app/{app_id}/msg/{msg_id}/endpoint/{endpoint_id}/resend',
    (w) => `/api/v1/app/${w.svixAppId}/msg/${w.svixMessageId}/endpoint/${w.svixEndpointId}/resend`,
    () => undefined,
    null,
  ],
  [
    'POST /api/v1/app/{app_id}/endpoint/{endpoint_id}/send-example',
    (w) => `/api/v1/app/${w.svixAppId}/endpoint/${w.svixEndpointId}/send-example`,
    () => ({ eventType: 'invoice.paid' }),
    null,
  ],
  [
    'POST /api/v1/app/{app_id}/endpoint/{endpoint_id}/replay-missing',
    (w) => `/api/v1/app/${w.svixAppId}/endpoint/${w.svixEndpointId}/replay-missing`,
    () => ({ since: since() }),
    null,
  ],
  [
    'POST /api/v1/app/{app_id}/endpoint/{endpoint_id}/recover',
    (w) => `/api/v1/app/${w.svixAppId}/endpoint/${w.svixEndpointId}/recover`,
    () => ({ since: since() }),
    null,
  ],
  [
    'POST /api/v1/app/{app_id}/endpoint/{endpoint_id}/bulk-replay',
    (w) => `/api/v1/app/${w.svixAppId}/endpoint/${w.svixEndpointId}/bulk-replay`,
    () => ({ since: since() }),
    null,
  ],
  [
    'DELETE /api/v1/app/{app_id}/msg/{msg_id}/content',
    (w) => `/api/v1/app/${w.svixAppId}/msg/${w.svixMessageId}/content`,
    () => undefined,
    null,
  ],
  [
    'POST /api/v1/event-type',
    () => '/api/v1/event-type',
    () => ({ name: 'audit.svix', description: 'first' }),
    'event_type.created',
  ],
  [
    'PUT /api/v1/event-type/{event_type_name}',
    () => '/api/v1/event-type/audit.svix',
    () => ({ description: 'second' }),
    'event_type.updated',
  ],
  [
    'PATCH /api/v1/event-type/{event_type_name}',
    () => '/api/v1/event-type/audit.svix',
    () => ({ description: 'third' }),
    'event_type.updated',
  ],
  [
    'DELETE /api/v1/event-type/{event_type_name}',
    () => '/api/v1/event-type/audit.svix',
    () => undefined,
    'event_type.updated',
  ],
  [
    'POST /api/v1/operational-webhook/endpoint',
    () => '/api/v1/operational-webhook/endpoint',
    () => ({ url: 'https://ops.example.com/svix' }),
    'operational_endpoint.created',
  ],
  [
    'PUT /api/v1/operational-webhook/endpoint/{endpoint_id}',
    (w) => `/api/v1/operational-webhook/endpoint/${w.svixOperationalId}`,
    () => ({ url: 'https://ops.example.com/svix2' }),
    'operational_endpoint.updated',
  ],
  [
    'POST /api/v1/operational-webhook/endpoint/{endpoint_id}/secret/rotate',
    (w) => `/api/v1/operational-webhook/endpoint/${w.svixOperationalId}/secret/rotate`,
    () => ({}),
    'operational_endpoint.secret_rotated',
  ],
  [
    'PUT /api/v1/operational-webhook/endpoint/{endpoint_id}/headers',
    (w) => `/api/v1/operational-webhook/endpoint/${w.svixOperationalId}/headers`,
    () => ({ headers: { 'X-Ops': SECRET_HEADER } }),
    'operational_endpoint.updated',
  ],
  [
    'DELETE /api/v1/operational-webhook/endpoint/{endpoint_id}',
    (w) => `/api/v1/operational-webhook/endpoint/${w.svixOperationalId}`,
    () => undefined,
    'operational_endpoint.deleted',
  ],
  [
    'DELETE /api/v1/app/{app_id}/endpoint/{endpoint_id}',
    (w) => `/api/v1/app/${w.svixAppId}/endpoint/${w.svixEndpointId}`,
    () => undefined,
    'endpoint.deleted',
  ],
  ['DELETE /api/v1/app/{app_id}', (w) => `/api/v1/app/${w.svixAppId}`, () => undefined, 'application.deleted'],
  // Last: what the steps above worked on.
  ['DELETE /api/v1/endpoints/{id}', (w) => `/api/v1/endpoints/${w.endpointId}`, () => undefined, 'endpoint.deleted'],
  [
    'DELETE /api/v1/applications/{id}',
    (w) => `/api/v1/applications/${w.appId}`,
    () => undefined,
    'application.deleted',
  ],
];

/** What each step's answer adds to the world later steps use. */
function learn(operation: string, reply: Reply, world: World): void {
  const body = reply.body ?? {};
  switch (operation) {
    case 'POST /api/v1/applications':
      world.appId = body.id;
      break;
    case 'POST /api/v1/endpoints':
      world.endpointId = body.id;
      break;
    case 'POST /api/v1/messages':
      world.messageId = body.id;
      world.deliveryId = body.delivery_ids[0];
      break;
    case 'POST /api/v1/endpoints/{id}/recover':
      world.taskId = body.id;
      break;
    case 'POST /api/v1/operational-endpoints':
      world.operationalId = body.id;
      break;
    case 'POST /api/v1/api-keys':
      world.keyId = body.id;
      break;
    case 'POST /api/v1/app':
      world.svixAppId = body.id;
      break;
    case 'POST /api/v1/app/{app_id}/endpoint':
      world.svixEndpointId = body.id;
      break;
    case 'POST /api/v1/app/{app_id}/msg':
      world.svixMessageId = body.id;
      break;
    case 'POST /api/v1/operational-webhook/endpoint':
      world.svixOperationalId = body.id;
      break;
  }
}

describe('the audit log, walked over every operation that changes something', () => {
  let service: TestService;
  let receiver: Receiver;
  let admin: Client;
  let adminKeyId: string;
  let mutating: string[];

  before(async () => {
    service = await startTestService();
    receiver = await new Receiver().start();
    const org = await bootstrap(service.url);
    admin = org.test;
    adminKeyId = org.raw.test_key.id;
    const document = (await admin.get('/api/v1/openapi.json')).body;
    const open = new Set(PUBLIC_ROUTES.map(([method, path]) => `${method} ${path}`));
    mutating = Object.entries(document.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`))
      .filter((operation) => !operation.startsWith('GET ') && !open.has(operation));
  });
  after(async () => {
    await service?.stop();
    await receiver?.stop();
  });

  test('the table names every operation that changes something, and nothing else', () => {
    const named = STEPS.map(([operation]) => operation);
    assert.deepEqual(
      mutating.filter((operation) => !named.includes(operation)),
      [],
      'operations without a step',
    );
    assert.deepEqual(
      named.filter((operation) => !mutating.includes(operation)),
      [],
      'steps of operations the document no longer has',
    );
  });

  test('each change of configuration leaves exactly one entry, by its key and request, with no secret', async () => {
    const world = { receiver: `${receiver.url}/audited` } as unknown as World;
    const entries = async () => (await admin.get('/api/v1/audit-log?limit=250')).body.data as any[];
    for (const [operation, path, body, action] of STEPS) {
      const method = operation.split(' ')[0]!;
      const seen = new Set((await entries()).map((entry) => entry.id));
      const reply = await admin.request(method, path(world), body(world));
      const accepted = reply.status < 300 || (action === null && reply.status === 409);
      assert.ok(accepted, `${operation}: ${reply.status} ${JSON.stringify(reply.body)}`);
      learn(operation, reply, world);
      if (operation === 'POST /api/v1/messages')
        await eventually(async () => receiver.received.length > 0, 10_000, 'the message delivered');
      const added = (await entries()).filter((entry) => !seen.has(entry.id));
      if (action === null) {
        assert.deepEqual(added, [], `${operation} changes no configuration: no entry`);
        continue;
      }
      assert.equal(added.length, 1, `${operation}: exactly one entry, got ${JSON.stringify(added)}`);
      const [entry] = added;
      assert.equal(entry.action, action, operation);
      assert.match(entry.id, /^aud_/);
      assert.equal(entry.object, 'audit_entry');
      assert.deepEqual(entry.actor, { type: 'api_key', id: adminKeyId }, `${operation}: by the calling key`);
      assert.equal(entry.request_id, reply.headers.get('x-request-id'), `${operation}: its request`);
      assert.equal(entry.resource.type, action.split('.')[0], operation);
      assert.ok(Object.keys(entry.changes).length > 0, `${operation}: says what changed`);
      const text = JSON.stringify(entry);
      for (const secret of [/whsec_/, /whsk_/, /sk_test_/, new RegExp(SECRET_HEADER)])
        assert.doesNotMatch(text, secret, `${operation}: no secret in the entry`);
    }
  });

  test("entries say each field's before and after, secrets redacted, and filter by resource, action and actor", async () => {
    const app = (await admin.post('/api/v1/applications', { name: 'Before' })).body;
    const endpoint = (
      await admin.post('/api/v1/endpoints', {
        app_id: app.id,
        url: 'https://example.com/one',
        headers: { 'X-Api-Token': SECRET_HEADER },
        sensitive_headers: ['X-Api-Token'],
      })
    ).body;
    await admin.patch(`/api/v1/applications/${app.id}`, { name: 'After' });
    await admin.patch(`/api/v1/endpoints/${endpoint.id}`, { url: 'https://example.com/two' });
    await admin.post(`/api/v1/endpoints/${endpoint.id}/rotate-secret`, {});

    const history = (await admin.get(`/api/v1/audit-log?resource_id=${endpoint.id}`)).body.data;
    assert.deepEqual(
      history.map((entry: any) => entry.action),
      ['endpoint.secret_rotated', 'endpoint.updated', 'endpoint.created'],
      'newest first',
    );
    assert.deepEqual(history[1].changes.url, ['https://example.com/one', 'https://example.com/two']);
    assert.deepEqual(history[0].changes.secret_sealed, ['<redacted>', '<redacted>']);
    assert.deepEqual(history[2].changes.headers_sealed, [null, '<redacted>']);
    const renamed = (await admin.get(`/api/v1/audit-log?resource_type=application&action=application.updated`)).body
      .data;
    assert.deepEqual(renamed[0].changes.name, ['Before', 'After']);
    assert.ok(renamed.every((entry: any) => entry.action === 'application.updated'));
    const byOther = (await admin.get('/api/v1/audit-log?actor_id=key_nobody')).body.data;
    assert.deepEqual(byOther, []);
    const future = new Date(Date.now() + 60_000).toISOString();
    assert.deepEqual((await admin.get(`/api/v1/audit-log?since=${future}`)).body.data, []);
    // Another environment's log is its own.
    const live = (await bootstrap(service.url)).live;
    assert.deepEqual((await live.get(`/api/v1/audit-log?resource_id=${endpoint.id}`)).body.data, []);
  });

  test('entries are kept HERALD_AUDIT_RETENTION (365 days unless set), then retention removes them', async () => {
    assert.equal(service.config.auditRetentionMs, 365 * 86_400_000);
    const count = async () =>
      Number(
        (
          await service.store.ctx.db
            .selectFrom('audit_log')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const before = await count();
    assert.ok(before > 0);
    const dayLater = { ...service.store.ctx, now: () => Date.now() + 86_400_000 };
    const kept = await purgeExpired(dayLater, { retentionMs: 365 * 86_400_000, auditRetentionMs: 2 * 86_400_000 });
    assert.equal(kept.auditEntries, 0, 'younger than two days: kept');
    assert.equal(await count(), before);
    const gone = await purgeExpired(dayLater, { retentionMs: 365 * 86_400_000, auditRetentionMs: 3_600_000 }, 7);
    assert.equal(gone.auditEntries, before, 'older than an hour a day later: every entry, in batches');
    assert.equal(await count(), 0);
  });
});
