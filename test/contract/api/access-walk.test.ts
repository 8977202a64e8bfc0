import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, type Client, type Reply } from '../../support/client.js';
import { createApp, createEndpoint, emit, PUBLIC_ROUTES } from '../../support/api.js';

// Scoped keys (decisions.md, Fourth wave, Access), walked over the OpenAPI document: every operation
// behind a key is called with a key of each role, and with a key limited to one application against
// another application's resources, and must be allowed or refused (403 `forbidden`) as this table says.
// An operation the table does not name fails the walk: a new route gets its rule written here.

/** Which roles may call an operation. */
type Reach = 'admin' | 'write' | 'read' | 'emit' | 'message';
/**
 * What a key limited to application A meets: `other` refused on application B's resources, `every`
 * refused outright (it spans every application), `own` only A's in the list, `catalog` reads allowed and
 * changes refused, `keys` its own rules (scoped-keys.test.ts).
 */
type Limited = 'other' | 'every' | 'own' | 'catalog' | 'keys';

const RULES: Record<string, [Reach, Limited]> = {
  'GET /api/v1/messages': ['read', 'other'],
  'POST /api/v1/messages': ['emit', 'other'],
  'POST /api/v1/messages/send-test': ['write', 'other'],
  'GET /api/v1/messages/{id}': ['message', 'other'],
  'GET /api/v1/messages/{id}/payload': ['read', 'other'],
  'POST /api/v1/messages/{id}/replay': ['write', 'other'],
  'GET /api/v1/messages/{id}/deliveries': ['read', 'other'],
  'GET /api/v1/applications': ['read', 'own'],
  'POST /api/v1/applications': ['write', 'every'],
  'GET /api/v1/applications/{id}': ['read', 'other'],
  'PATCH /api/v1/applications/{id}': ['write', 'other'],
  'DELETE /api/v1/applications/{id}': ['write', 'other'],
  'POST /api/v1/applications/{id}/rotate-portal-path': ['write', 'other'],
  'GET /api/v1/applications/{id}/stats': ['read', 'other'],
  'GET /api/v1/endpoints': ['read', 'other'],
  'POST /api/v1/endpoints': ['write', 'other'],
  'GET /api/v1/endpoints/{id}': ['read', 'other'],
  'PATCH /api/v1/endpoints/{id}': ['write', 'other'],
  'DELETE /api/v1/endpoints/{id}': ['write', 'other'],
  'POST /api/v1/endpoints/{id}/rotate-secret': ['write', 'other'],
  'POST /api/v1/endpoints/{id}/filter-test': ['write', 'other'],
  'POST /api/v1/endpoints/{id}/transformation/simulate': ['write', 'other'],
  'POST /api/v1/endpoints/{id}/recover': ['write', 'other'],
  'POST /api/v1/endpoints/{id}/bulk-replay': ['write', 'other'],
  'GET /api/v1/endpoints/{id}/stats': ['read', 'other'],
  'GET /api/v1/background-tasks/{id}': ['read', 'other'],
  'POST /api/v1/background-tasks/{id}/cancel': ['write', 'other'],
  'GET /api/v1/operational-endpoints': ['admin', 'every'],
  'POST /api/v1/operational-endpoints': ['admin', 'every'],
  'PATCH /api/v1/operational-endpoints/{id}': ['admin', 'every'],
  'DELETE /api/v1/operational-endpoints/{id}': ['admin', 'every'],
  'POST /api/v1/operational-endpoints/{id}/rotate-secret': ['admin', 'every'],
  'GET /api/v1/deliveries': ['read', 'other'],
  'GET /api/v1/deliveries/{id}': ['read', 'other'],
  'POST /api/v1/deliveries/{id}/retry': ['write', 'other'],
  'GET /api/v1/event-types': ['read', 'catalog'],
  'POST /api/v1/event-types': ['write', 'catalog'],
  'GET /api/v1/event-types/{name}': ['read', 'catalog'],
  'PATCH /api/v1/event-types/{name}': ['write', 'catalog'],
  'GET /api/v1/api-keys': ['admin', 'keys'],
  'POST /api/v1/api-keys': ['admin', 'keys'],
  'DELETE /api/v1/api-keys/{id}': ['admin', 'keys'],
  'GET /api/v1/audit-log': ['admin', 'every'],
  // The Svix-compatible surface.
  'GET /api/v1/app': ['read', 'own'],
  'POST /api/v1/app': ['write', 'every'],
  'GET /api/v1/app/{app_id}': ['read', 'other'],
  'PUT /api/v1/app/{app_id}': ['write', 'other'],
  'PATCH /api/v1/app/{app_id}': ['write', 'other'],
  'DELETE /api/v1/app/{app_id}': ['write', 'other'],
  'GET /api/v1/app/{app_id}/attempt/endpoint/{endpoint_id}': ['read', 'other'],
  'GET /api/v1/app/{app_id}/attempt/msg/{msg_id}': ['read', 'other'],
  'GET /api/v1/app/{app_id}/msg/{msg_id}/attempt/{attempt_id}': ['read', 'other'],
  'GET /api/v1/app/{app_id}/endpoint/{endpoint_id}/msg': ['read', 'other'],
  'GET /api/v1/app/{app_id}/msg/{msg_id}/endpoint': ['read', 'other'],
  'POST /api/v1/app/{app_id}/msg/{msg_id}/endpoint/{endpoint_id}/resend': ['write', 'other'],
  'GET /api/v1/background-task': ['read', 'every'],
  'GET /api/v1/background-task/{task_id}': ['read', 'other'],
  'GET /api/v1/app/{app_id}/endpoint': ['read', 'other'],
  'POST /api/v1/app/{app_id}/endpoint': ['write', 'other'],
  'GET /api/v1/app/{app_id}/endpoint/{endpoint_id}': ['read', 'other'],
  'PUT /api/v1/app/{app_id}/endpoint/{endpoint_id}': ['write', 'other'],
  'PATCH /api/v1/app/{app_id}/endpoint/{endpoint_id}': ['write', 'other'],
  'DELETE /api/v1/app/{app_id}/endpoint/{endpoint_id}': ['write', 'other'],
  'GET /api/v1/app/{app_id}/endpoint/{endpoint_id}/stats': ['read', 'other'],
  'GET /api/v1/app/{app_id}/endpoint/{endpoint_id}/transformation': ['read', 'other'],
  'PATCH /api/v1/app/{app_id}/endpoint/{endpoint_id}/transformation': ['write', 'other'],
  'POST /api/v1/app/{app_id}/endpoint/{endpoint_id}/replay-missing': ['write', 'other'],
  'POST /api/v1/app/{app_id}/endpoint/{endpoint_id}/bulk-replay': ['write', 'other'],
  'POST /api/v1/app/{app_id}/endpoint/{endpoint_id}/send-example': ['write', 'other'],
  'POST /api/v1/app/{app_id}/endpoint/{endpoint_id}/recover': ['write', 'other'],
  'GET /api/v1/app/{app_id}/endpoint/{endpoint_id}/secret': ['read', 'other'],
  'GET /api/v1/operational-webhook/endpoint/{endpoint_id}/secret': ['admin', 'every'],
  'POST /api/v1/app/{app_id}/endpoint/{endpoint_id}/secret/rotate': ['write', 'other'],
  'POST /api/v1/operational-webhook/endpoint/{endpoint_id}/secret/rotate': ['admin', 'every'],
  'GET /api/v1/app/{app_id}/endpoint/{endpoint_id}/headers': ['read', 'other'],
  'GET /api/v1/operational-webhook/endpoint/{endpoint_id}/headers': ['admin', 'every'],
  'PUT /api/v1/app/{app_id}/endpoint/{endpoint_id}/headers': ['write', 'other'],
  'PUT /api/v1/operational-webhook/endpoint/{endpoint_id}/headers': ['admin', 'every'],
  'PATCH /api/v1/app/{app_id}/endpoint/{endpoint_id}/headers': ['write', 'other'],
  'GET /api/v1/event-type': ['read', 'catalog'],
  'POST /api/v1/event-type': ['write', 'catalog'],
  'GET /api/v1/event-type/{event_type_name}': ['read', 'catalog'],
  'PUT /api/v1/event-type/{event_type_name}': ['write', 'catalog'],
  'PATCH /api/v1/event-type/{event_type_name}': ['write', 'catalog'],
  'DELETE /api/v1/event-type/{event_type_name}': ['write', 'catalog'],
  'GET /api/v1/app/{app_id}/msg': ['read', 'other'],
  'POST /api/v1/app/{app_id}/msg': ['emit', 'other'],
  'GET /api/v1/app/{app_id}/msg/{msg_id}': ['message', 'other'],
  'DELETE /api/v1/app/{app_id}/msg/{msg_id}/content': ['write', 'other'],
  'GET /api/v1/operational-webhook/endpoint': ['admin', 'every'],
  'POST /api/v1/operational-webhook/endpoint': ['admin', 'every'],
  'GET /api/v1/operational-webhook/endpoint/{endpoint_id}': ['admin', 'every'],
  'PUT /api/v1/operational-webhook/endpoint/{endpoint_id}': ['admin', 'every'],
  'DELETE /api/v1/operational-webhook/endpoint/{endpoint_id}': ['admin', 'every'],
  'POST /api/v1/auth/app-portal-access/{app_id}': ['write', 'other'],
};

const ALLOWED: Record<Reach, string[]> = {
  admin: ['admin'],
  write: ['admin', 'writer'],
  read: ['admin', 'writer', 'reader'],
  emit: ['admin', 'writer', 'emitter'],
  message: ['admin', 'writer', 'reader', 'emitter'],
};
const ROLES = ['admin', 'writer', 'reader', 'emitter'];

/** A 403 `forbidden` in the native envelope or in Svix's, whose message says `why`. */
function assertForbidden(reply: Reply, operation: string, why: RegExp): void {
  assert.equal(reply.status, 403, `${operation}: expected 403, got ${reply.status} ${JSON.stringify(reply.body)}`);
  const code = reply.body?.error?.code ?? reply.body?.code;
  const message = reply.body?.error?.message ?? reply.body?.detail;
  assert.equal(code, 'forbidden', `${operation}: ${JSON.stringify(reply.body)}`);
  assert.match(message, why, operation);
}

describe('every operation, with a key of each role and a key limited to one application', () => {
  let service: TestService;
  let admin: Client;
  let operations: [method: string, path: string][];
  const keys: Record<string, Client> = {};
  let limitedToA: Client;
  const b: Record<string, string> = {};
  let appA: string;

  before(async () => {
    service = await startTestService({ HERALD_ROLE: 'api' });
    const org = await bootstrap(service.url);
    admin = org.test;
    const document = (await admin.get('/api/v1/openapi.json')).body;
    // Every operation but the few that need no key (openapi.test.ts holds that list to the document).
    const open = new Set(PUBLIC_ROUTES.map(([method, path]) => `${method} ${path}`));
    operations = Object.entries(document.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, item]) => Object.keys(item).map((method) => [method.toUpperCase(), path] as [string, string]))
      .filter(([method, path]) => !open.has(`${method} ${path}`));
    for (const role of ROLES) {
      const made = await admin.post('/api/v1/api-keys', { name: role, role });
      assert.equal(made.status, 201, JSON.stringify(made.body));
      assert.equal(made.body.role, role);
      keys[role] = admin.withKey(made.body.key);
    }
    appA = (await createApp(admin, { name: 'A', uid: 'app-a' })).id;
    const appB = await createApp(admin, { name: 'B', uid: 'app-b' });
    const endpoint = await createEndpoint(admin, appB.id);
    const message = await emit(admin, appB.id);
    const deliveries = await admin.get(`/api/v1/deliveries?message_id=${message.id}`);
    const task = await admin.post(`/api/v1/endpoints/${endpoint.id}/recover`, {
      since: new Date(Date.now() - 60_000).toISOString(),
    });
    assert.equal(task.status, 202, JSON.stringify(task.body));
    Object.assign(b, {
      app: appB.id,
      endpoint: endpoint.id,
      message: message.id,
      delivery: deliveries.body.data[0].id,
      task: task.body.id,
    });
    const limited = await admin.post('/api/v1/api-keys', { name: 'A only', app_ids: ['app-a'] });
    assert.deepEqual(limited.body.app_ids, [appA], 'app_ids are kept as ids, given by uid');
    limitedToA = admin.withKey(limited.body.key);
  });
  after(async () => service?.stop());

  test('the table names every operation behind a key, and nothing else', () => {
    const named = new Set(Object.keys(RULES));
    const walked = operations.map(([method, path]) => `${method} ${path}`);
    const unnamed = walked.filter((operation) => !named.has(operation));
    assert.deepEqual(unnamed, [], 'operations without a rule in this test');
    const gone = [...named].filter((operation) => !walked.includes(operation));
    assert.deepEqual(gone, [], 'rules of operations the document no longer has');
  });

  test('each role is allowed exactly what its row says; the rest is 403 naming the role', async () => {
    for (const [method, path] of operations) {
      const operation = `${method} ${path}`;
      const [reach] = RULES[operation]!;
      // Ids that name nothing: an allowed call reaches its handler (404, 400, or a success that
      // changes nothing of the fixtures), a refused one never does.
      const url = path.replace(/\{(\w+)\}/g, (_, name: string) =>
        name === 'name' || name === 'event_type_name' ? 'no.such.type' : `${name}_missing`,
      );
      for (const role of ROLES) {
        const reply = await keys[role]!.request(method, url, method === 'GET' ? undefined : {});
        if (ALLOWED[reach].includes(role))
          assert.notEqual(reply.status, 403, `${operation} as ${role}: ${JSON.stringify(reply.body)}`);
        else assertForbidden(reply, `${operation} as ${role}`, new RegExp(`role ${role} cannot`));
      }
    }
  });

  test("a key limited to application A is refused on B's resources and on what spans every application", async () => {
    const bodies: Record<string, object> = {
      'POST /api/v1/messages': { app_id: 'app-b', event_type: 'invoice.paid', payload: { n: 1 } },
      'POST /api/v1/messages/send-test': { app_id: 'app-b' },
      'POST /api/v1/endpoints': { app_id: 'app-b', url: 'https://example.com/b' },
    };
    // Lists name B by their filter.
    const listFilters: Record<string, string> = {
      'GET /api/v1/messages': `?app_id=${b.app}`,
      'GET /api/v1/endpoints': '?app_id=app-b',
      'GET /api/v1/deliveries': `?endpoint_id=${b.endpoint}`,
    };
    for (const [method, path] of operations) {
      const operation = `${method} ${path}`;
      const [, limited] = RULES[operation]!;
      const family = path.split('/')[3];
      const url =
        path.replace(/\{(\w+)\}/g, (_, name: string) => {
          if (name === 'app_id') return b.app!;
          if (name === 'endpoint_id') return b.endpoint!;
          if (name === 'msg_id') return b.message!;
          if (name === 'task_id') return b.task!;
          if (name === 'name' || name === 'event_type_name') return 'invoice.paid';
          if (name === 'attempt_id') return 'atmpt_missing';
          // `{id}` of the native API: the resource its path names.
          const byFamily: Record<string, string> = {
            applications: b.app!,
            endpoints: b.endpoint!,
            messages: b.message!,
            deliveries: b.delivery!,
            'background-tasks': b.task!,
            'operational-endpoints': 'ep_missing',
          };
          return byFamily[family!] ?? `${name}_missing`;
        }) + (listFilters[operation] ?? '');
      const reply = await limitedToA.request(method, url, method === 'GET' ? undefined : (bodies[operation] ?? {}));
      switch (limited) {
        case 'other':
          assertForbidden(
            reply,
            operation,
            new RegExp(`limited to application ${appA} and cannot act on application ${b.app}`),
          );
          break;
        case 'every':
          assertForbidden(reply, operation, /needs a key for every application/);
          break;
        case 'own': {
          assert.equal(reply.status, 200, operation);
          const ids = reply.body.data.map((app: { id: string }) => app.id);
          assert.deepEqual(ids, [appA], `${operation} lists only the key's application`);
          break;
        }
        case 'catalog':
          if (method === 'GET') assert.equal(reply.status, 200, `${operation}: ${JSON.stringify(reply.body)}`);
          else assertForbidden(reply, operation, /needs a key for every application/);
          break;
        case 'keys':
          break;
      }
    }
    // B is untouched: every refused change left it as it was.
    const app = await admin.get(`/api/v1/applications/${b.app}`);
    assert.equal(app.body.name, 'B');
    assert.equal((await admin.get(`/api/v1/endpoints/${b.endpoint}`)).status, 200);
  });

  test('a list spanning applications must name one for a limited key; naming A works', async () => {
    for (const path of ['/api/v1/messages', '/api/v1/endpoints', '/api/v1/deliveries']) {
      assertForbidden(await limitedToA.get(path), `GET ${path}`, /must name one \(app_id/);
      const own = await limitedToA.get(`${path}?app_id=app-a`);
      assert.equal(own.status, 200, `${path}: ${JSON.stringify(own.body)}`);
    }
    const emitted = await limitedToA.post('/api/v1/messages', {
      app_id: 'app-a',
      event_type: 'invoice.paid',
      payload: {},
    });
    assert.equal(emitted.status, 201, JSON.stringify(emitted.body));
    assert.equal((await limitedToA.get(`/api/v1/messages/${emitted.body.id}`)).status, 200);
  });
});
