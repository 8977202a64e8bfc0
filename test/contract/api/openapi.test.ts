import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from '../../support/service.js';
import { Client } from '../../support/client.js';
import { AUTHENTICATED_ROUTES, PUBLIC_ROUTES } from '../../support/api.js';
import { compileResponseSerializers } from '../../../src/api/app.js';

// The OpenAPI document is generated from the route schemas; it must list every route with its statuses.
describe('openapi.json', () => {
  let service: TestService;
  let doc: any;

  before(async () => {
    service = await startTestService({ HERALD_ROLE: 'api' });
    const reply = await new Client(service.url).get('/api/v1/openapi.json');
    assert.equal(reply.status, 200, 'openapi.json needs no key');
    doc = reply.body;
  });
  after(async () => service?.stop());

  const operations = () =>
    Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`),
    );

  test("every route's documented answers compile into their serializers (compiled on first use in a service)", () => {
    // The native API's documented answers: a few hundred (route, status) pairs, none of which may fail.
    assert.ok(compileResponseSerializers(service.api as never) > 100);
  });

  test('is an OpenAPI 3 document with exactly the documented routes, all registered', async () => {
    assert.match(doc.openapi, /^3\./);
    assert.equal(typeof doc.info.title, 'string');
    const expected = [...AUTHENTICATED_ROUTES, ...PUBLIC_ROUTES].map(([method, path]) => `${method} ${path}`).sort();
    assert.deepEqual(operations().sort(), expected);
    for (const [method, path] of [...AUTHENTICATED_ROUTES, ...PUBLIC_ROUTES]) {
      const url = path.replace(/\{([a-z_]+)\}/g, ':$1');
      assert.ok(service.api!.hasRoute({ method: method as 'GET', url }), `${method} ${url} is registered`);
    }
  });

  test('every operation has a summary and documents its success and error statuses', async () => {
    const statuses = (method: string, path: string) =>
      Object.keys(doc.paths[path][method.toLowerCase()].responses).sort();
    for (const [method, path] of [...AUTHENTICATED_ROUTES, ...PUBLIC_ROUTES]) {
      const op = doc.paths[path][method.toLowerCase()];
      assert.equal(typeof op.summary, 'string', `${method} ${path} summary`);
      const codes = statuses(method, path);
      assert.ok(
        codes.some((c) => c.startsWith('2')),
        `${method} ${path} documents a success status`,
      );
    }
    for (const [method, path] of AUTHENTICATED_ROUTES) {
      assert.ok(statuses(method, path).includes('401'), `${method} ${path} documents 401`);
      // Revoking a key is never rate limited.
      const limited = !(method === 'DELETE' && path === '/api/v1/api-keys/{id}');
      assert.equal(
        statuses(method, path).includes('429'),
        limited,
        `${method} ${path} documents 429 when it is limited`,
      );
    }
    // The statuses api-v1.md lists for each operation.
    const contract: Record<string, string[]> = {
      'GET /api/v1/messages': ['200', '401'],
      'POST /api/v1/messages': ['200', '201', '400', '401', '404', '413', '429'],
      'GET /api/v1/messages/{id}': ['200', '401', '404'],
      'POST /api/v1/messages/{id}/replay': ['200', '401', '404'],
      'POST /api/v1/messages/send-test': ['202', '400', '401', '403', '404'],
      'GET /api/v1/applications': ['200', '401'],
      'POST /api/v1/applications': ['201', '400', '401', '409'],
      'GET /api/v1/endpoints': ['200', '401'],
      'POST /api/v1/endpoints': ['201', '400', '401', '404'],
      'POST /api/v1/endpoints/{id}/rotate-secret': ['200', '401', '404'],
      'GET /api/v1/deliveries/{id}': ['200', '401', '404'],
      'POST /api/v1/deliveries/{id}/retry': ['200', '401', '404'],
      'GET /api/v1/event-types': ['200', '401'],
      'POST /api/v1/api-keys': ['201', '401'],
      'POST /api/v1/event-types': ['201', '409'],
      'POST /api/v1/dev/bootstrap': ['201'],
    };
    for (const [operation, codes] of Object.entries(contract)) {
      const [method, path] = operation.split(' ') as [string, string];
      for (const code of codes) assert.ok(statuses(method, path).includes(code), `${operation} documents ${code}`);
    }
  });

  test('error responses use the envelope and the bearer scheme is declared', async () => {
    const error = doc.paths['/api/v1/messages'].post.responses['400'].content['application/json'].schema;
    assert.deepEqual(error.required, ['error']);
    assert.deepEqual(error.properties.error.required.sort(), ['code', 'message']);
    assert.equal(doc.components.securitySchemes.bearer.scheme, 'bearer');
    const emit = doc.paths['/api/v1/messages'].post;
    assert.ok(emit.parameters.some((p: any) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key'));
    assert.deepEqual(emit.requestBody.content['application/json'].schema.required.sort(), [
      'app_id',
      'event_type',
      'payload',
    ]);
  });

  test('every operation has a summary, each error it documents has a meaning and an example, and it shows an example', async () => {
    const missing: string[] = [];
    const shows = (content: Record<string, any> | undefined) =>
      Object.values(content ?? {}).some((media) => media.example !== undefined || media.examples !== undefined);
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(ops)) {
        const name = `${method.toUpperCase()} ${path}`;
        if (typeof op.summary !== 'string' || op.summary.length === 0) missing.push(`${name}: summary`);
        const responses = Object.entries(op.responses as Record<string, any>);
        for (const [status, response] of responses.filter(([status]) => Number(status) >= 400)) {
          if (!response.description || response.description === 'Default Response')
            missing.push(`${name} ${status}: description`);
          if (!shows(response.content)) missing.push(`${name} ${status}: example`);
        }
        if (!shows(op.requestBody?.content) && !responses.some(([, response]) => shows(response.content)))
          missing.push(`${name}: an example`);
      }
    }
    assert.deepEqual(missing, []);
    // The emit's success example is a whole message, as the API answers it.
    const emitted = doc.paths['/api/v1/messages'].post.responses['201'].content['application/json'].example;
    assert.match(emitted.id, /^evt_/);
    assert.ok(Array.isArray(emitted.delivery_ids));
  });

  test('the /docs page shows real examples: every request body and success body has one, none is a placeholder', async () => {
    const shows = (media: any) => media.example !== undefined || media.examples !== undefined;
    const missing: string[] = [];
    const examples: [string, unknown][] = [];
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(ops)) {
        const name = `${method.toUpperCase()} ${path}`;
        for (const media of Object.values(op.requestBody?.content ?? {}) as any[]) {
          if (!shows(media)) missing.push(`${name}: request body example`);
          examples.push([`${name} body`, media.example ?? media.examples]);
        }
        for (const [status, response] of Object.entries(op.responses as Record<string, any>)) {
          for (const media of Object.values(response.content ?? {}) as any[]) {
            if (Number(status) < 300 && !shows(media)) missing.push(`${name} ${status}: response example`);
            examples.push([`${name} ${status}`, media.example ?? media.examples]);
          }
        }
      }
    }
    assert.deepEqual(missing, []);
    // Swagger UI's generated placeholders ("string", additionalProp1) never stand in for a value; a JSON
    // Schema inside an example may still say {"type": "string"}.
    const placeholders: string[] = [];
    const walk = (where: string, value: unknown, key: string) => {
      if (value === 'string' && key !== 'type') placeholders.push(`${where}: ${key}`);
      if (value === null || typeof value !== 'object') return;
      for (const [name, child] of Object.entries(value)) {
        if (/^additionalProp/.test(name)) placeholders.push(`${where}: ${name}`);
        walk(where, child, name);
      }
    };
    for (const [where, example] of examples) walk(where, example, '');
    assert.deepEqual(placeholders, []);
  });

  test('every response says what it means: 201 created, 200 on an emit the idempotent repeat; idempotency-key described', async () => {
    const vague: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(ops)) {
        for (const [status, response] of Object.entries(op.responses as Record<string, any>)) {
          if (!response.description || response.description === 'Default Response')
            vague.push(`${method.toUpperCase()} ${path} ${status}`);
        }
        for (const parameter of op.parameters ?? []) {
          if (parameter.in === 'header' && parameter.name.toLowerCase() === 'idempotency-key') {
            if (!/repeat/i.test(parameter.description ?? ''))
              vague.push(`${method.toUpperCase()} ${path}: idempotency-key description`);
          }
        }
      }
    }
    assert.deepEqual(vague, []);
    const emit = doc.paths['/api/v1/messages'].post;
    assert.match(emit.responses['201'].description, /^Created/);
    assert.match(emit.responses['200'].description, /^Idempotent repeat: the earlier answer/);
    assert.match(doc.paths['/api/v1/applications'].post.responses['201'].description, /^Created/);
    const header = emit.parameters.find((p: any) => p.in === 'header' && p.name === 'idempotency-key');
    assert.match(header.description, /answers 200 with the first emit/);
    assert.equal(header.schema.example ?? header.example, 'order-1001');
  });
});
