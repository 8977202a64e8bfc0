import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, Client } from '../../support/client.js';
import {
  assertError,
  assertSvixError,
  AUTHENTICATED_ROUTES,
  NATIVE_ROUTES,
  SVIX_ROUTES,
  concrete,
  createApp,
  createEndpoint,
  emit,
  idsOf,
  ODD_BODIES,
  oddBodiesFor,
} from '../../support/api.js';

const MAX_BODY = 4096;

// Bad input gets a clear 4xx envelope and changes nothing; no input yields a 5xx.
describe('bad input', () => {
  let service: TestService;
  let api: Client;
  let live: Client;
  let app: any;
  let liveApp: any;
  let endpoint: any;
  let message: any;

  before(async () => {
    service = await startTestService({ HERALD_ROLE: 'api', HERALD_MAX_PAYLOAD_BYTES: String(MAX_BODY) });
    ({ test: api, live } = await bootstrap(service.url));
    app = await createApp(api, { name: 'Target', uid: 'target' });
    liveApp = await createApp(live, { name: 'Live target' });
    endpoint = await createEndpoint(api, app.id);
    message = await emit(api, app.id);
  });
  after(async () => service?.stop());

  /** Everything a client can list, in both environments, to prove a refused request stored nothing. */
  async function snapshot() {
    const state: Record<string, unknown> = {};
    for (const [env, client] of [
      ['test', api],
      ['live', live],
    ] as const) {
      for (const path of [
        '/api/v1/messages',
        '/api/v1/applications',
        '/api/v1/endpoints',
        '/api/v1/deliveries',
        '/api/v1/api-keys',
      ]) {
        state[`${env} ${path}`] = await idsOf(client, path);
      }
      state[`${env} event types`] = (await client.get('/api/v1/event-types?limit=250')).body.data.map(
        (e: any) => `${e.name}@${e.version}:${e.description}`,
      );
      state[`${env} endpoint details`] = (await client.get('/api/v1/endpoints?limit=250')).body.data.map(
        (e: any) => `${e.url}|${e.status}|${e.description}|${e.event_types}`,
      );
      state[`${env} application details`] = (await client.get('/api/v1/applications?limit=250')).body.data.map(
        (a: any) => `${a.name}|${a.uid}`,
      );
    }
    return state;
  }

  async function refusedAndUnchanged(run: () => Promise<void>) {
    const before = await snapshot();
    await run();
    assert.deepEqual(await snapshot(), before, 'a refused request changed stored data');
  }

  const emitBody = (extra: Record<string, unknown>) => ({
    app_id: app.id,
    event_type: 'invoice.paid',
    payload: {},
    ...extra,
  });

  test('malformed JSON and non-object bodies are 400 invalid_request on every body route', async () => {
    await refusedAndUnchanged(async () => {
      for (const path of [
        '/api/v1/messages',
        '/api/v1/messages/send-test',
        '/api/v1/applications',
        '/api/v1/endpoints',
        '/api/v1/event-types',
        '/api/v1/api-keys',
      ]) {
        assertError(await api.post(path, '{"app_id": '), 400, 'invalid_request', /JSON/);
        assertError(await api.post(path, "{'single': 'quotes'}"), 400, 'invalid_request', /JSON/);
        for (const text of ['null', '[]', '[{"name":"x"}]', '"a string"', '42', 'true']) {
          assertError(await api.post(path, text), 400, 'invalid_request', /body/);
        }
      }
      assertError(await api.patch(`/api/v1/applications/${app.id}`, '{oops'), 400, 'invalid_request', /JSON/);
      assertError(await api.patch(`/api/v1/endpoints/${endpoint.id}`, '[1]'), 400, 'invalid_request', /body/);
      assertError(await api.patch('/api/v1/event-types/invoice.paid', 'null'), 400, 'invalid_request', /body/);
    });
  });

  test('emit: wrong types and missing fields are 400 naming the field', async () => {
    await refusedAndUnchanged(async () => {
      assertError(await api.post('/api/v1/messages', emitBody({ app_id: 42 })), 400, 'invalid_request', /app_id/);
      assertError(await api.post('/api/v1/messages', emitBody({ payload: [1, 2] })), 400, 'invalid_request', /payload/);
      assertError(await api.post('/api/v1/messages', emitBody({ payload: 'text' })), 400, 'invalid_request', /payload/);
      assertError(await api.post('/api/v1/messages', emitBody({ payload: null })), 400, 'invalid_request', /payload/);
      assertError(
        await api.post('/api/v1/messages', emitBody({ event_type: ['invoice.paid'] })),
        400,
        'invalid_request',
        /event_type/,
      );
      assertError(
        await api.post('/api/v1/messages', { event_type: 'invoice.paid', payload: {} }),
        400,
        'invalid_request',
        /app_id/,
      );
      assertError(
        await api.post('/api/v1/messages', { app_id: app.id, payload: {} }),
        400,
        'invalid_request',
        /event_type/,
      );
      assertError(
        await api.post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid' }),
        400,
        'invalid_request',
        /payload/,
      );
      assertError(
        await api.post('/api/v1/messages', emitBody({ event_type: 'not.in.catalog' })),
        400,
        'invalid_request',
        /not\.in\.catalog/,
      );
      assertError(
        await api.post('/api/v1/messages', emitBody({ app_id: 'app_missing' })),
        404,
        'not_found',
        /app_missing/,
      );
      assertError(
        await api.post('/api/v1/messages/send-test', { app_id: app.id, payload: [1] }),
        400,
        'invalid_request',
        /payload/,
      );
    });
  });

  test('applications, endpoints, event types: wrong types, missing fields, bad URLs, conflicts', async () => {
    await refusedAndUnchanged(async () => {
      assertError(await api.post('/api/v1/applications', { uid: 'x' }), 400, 'invalid_request', /name/);
      assertError(await api.post('/api/v1/applications', { name: ['a'] }), 400, 'invalid_request', /name/);
      // PostgreSQL cannot store NUL in text and an unpaired surrogate is not Unicode: refused on both stores.
      assertError(await api.post('/api/v1/applications', { name: 'a\u0000b' }), 400, 'invalid_request', /body\/name/);
      assertError(
        await api.post('/api/v1/endpoints', { app_id: app.id, url: 'https://example.com', event_types: ['\ud800'] }),
        400,
        'invalid_request',
        /body\/event_types/,
      );
      assertError(
        await api.post('/api/v1/messages', emitBody({ idempotency_key: 'k\udc00' })),
        400,
        'invalid_request',
        /body\/idempotency_key/,
      );
      assertError(await api.get('/api/v1/messages?app_id=%00'), 400, 'invalid_request', /querystring\/app_id/);
      assertError(await api.get('/api/v1/applications/a%00'), 400, 'invalid_request', /params\/id/);
      assertError(await api.post('/api/v1/applications', { name: 'Dup', uid: 'target' }), 409, 'conflict', /target/);
      assertError(
        await api.post('/api/v1/endpoints', {
          app_id: app.id,
          url: 'https://example.com',
          event_types: 'invoice.paid',
        }),
        400,
        'invalid_request',
        /event_types/,
      );
      assertError(
        await api.post('/api/v1/endpoints', {
          app_id: app.id,
          url: 'https://example.com',
          event_types: ['invoice.paid', 'ghost.event'],
        }),
        400,
        'invalid_request',
        /ghost\.event/,
      );
      assertError(
        await api.post('/api/v1/endpoints', { app_id: app.id, url: 'https://example.com', event_types: [1] }),
        400,
        'invalid_request',
        /event_types/,
      );
      assertError(await api.post('/api/v1/endpoints', { app_id: app.id, url: 42 }), 400, 'invalid_request', /url/);
      assertError(
        await api.post('/api/v1/endpoints', { app_id: app.id, url: 'example.com/hook' }),
        400,
        'invalid_request',
        /url/,
      );
      assertError(
        await api.post('/api/v1/endpoints', { app_id: app.id, url: 'file:///etc/passwd' }),
        400,
        'invalid_request',
        /http/,
      );
      assertError(
        await api.post('/api/v1/endpoints', { app_id: app.id, url: 'ws://example.com' }),
        400,
        'invalid_request',
        /http/,
      );
      assertError(
        await api.post('/api/v1/endpoints', { url: 'https://example.com' }),
        400,
        'invalid_request',
        /app_id/,
      );
      for (const url of [
        'http://example.com/hook',
        'https://127.0.0.1/hook',
        'https://10.0.0.1/hook',
        'https://localhost/hook',
        'https://[::ffff:127.0.0.1]/',
        'https://0x7f.1/',
      ]) {
        assertError(
          await live.post('/api/v1/endpoints', { app_id: liveApp.id, url }),
          400,
          'invalid_request',
          /https|localhost|private|reserved/,
        );
      }
      assertError(await api.post('/api/v1/event-types', { name: 'invoice.paid' }), 409, 'conflict');
      assertError(await api.post('/api/v1/event-types', { name: 5 }), 400, 'invalid_request', /name/);
      assertError(
        await api.patch('/api/v1/event-types/invoice.paid', { description: 5 }),
        400,
        'invalid_request',
        /description/,
      );
      assertError(
        await api.patch(`/api/v1/endpoints/${endpoint.id}`, { event_types: ['ghost.event'] }),
        400,
        'invalid_request',
        /ghost\.event/,
      );
    });
  });

  test('a body over HERALD_MAX_PAYLOAD_BYTES is 413 payload_too_large', async () => {
    await refusedAndUnchanged(async () => {
      const big = emitBody({ payload: { blob: 'x'.repeat(MAX_BODY) } });
      assertError(await api.post('/api/v1/messages', big), 413, 'payload_too_large');
      assertError(
        await api.post('/api/v1/applications', { name: 'x'.repeat(MAX_BODY + 10) }),
        413,
        'payload_too_large',
      );
    });
    // Just under the limit is fine.
    const fits = emitBody({ payload: { blob: 'x'.repeat(MAX_BODY - 200) } });
    assert.ok(JSON.stringify(fits).length <= MAX_BODY);
    assert.equal((await api.post('/api/v1/messages', fits)).status, 201);
  });

  test('bad query parameters on every list are 400 naming the parameter', async () => {
    const lists = NATIVE_ROUTES.filter(([method, path]) => method === 'GET' && !path.includes('{')).map(
      ([, path]) => path,
    );
    // The Svix-compatible lists refuse them as Svix does: 422 naming the parameter.
    for (const [method, path] of SVIX_ROUTES.filter(([method, path]) => method === 'GET' && !path.includes('{')))
      for (const query of ['limit=0', 'limit=abc', 'limit=1.5', 'limit=100000']) {
        const reply = await api.request(method, `${path}?${query}`);
        assertSvixError(reply, 422, 'validation');
        assert.deepEqual(reply.body.detail[0].loc, ['query', 'limit']);
      }
    lists.push(`/api/v1/messages/${message.id}/deliveries`);
    for (const path of lists) {
      for (const query of ['limit=0', 'limit=abc', 'limit=-1', 'limit=1.5', 'limit=100000']) {
        assertError(await api.get(`${path}?${query}`), 400, 'invalid_request', /limit/);
      }
      // A cursor is the previous page's last id (or name): anything else would answer a wrong page.
      for (const cursor of ['garbage', 'evt_', 'app_zzz', 'Z', `${message.id}x`, 'a b']) {
        const reply = await api.get(`${path}?cursor=${encodeURIComponent(cursor)}`);
        // The catalog pages by name: only what cannot be a name is refused there.
        if (path === '/api/v1/event-types' && cursor !== 'a b')
          assert.equal(reply.status, 200, `${path} ${cursor}: could be a name`);
        else assertError(reply, 400, 'invalid_request', /cursor/);
      }
    }
    // An empty filter is refused, not read as no filter (which listed everything).
    for (const query of ['app_id=', 'message_id=', 'endpoint_id='])
      assertError(await api.get(`/api/v1/deliveries?${query}`), 400, 'invalid_request', /querystring\/\w+_id/);
    assertError(await api.get('/api/v1/endpoints?app_id='), 400, 'invalid_request', /app_id/);
    assertError(await api.get('/api/v1/messages?event_type='), 400, 'invalid_request', /event_type/);
    // The cursor of another kind of list is refused too.
    assertError(await api.get(`/api/v1/applications?cursor=${message.id}`), 400, 'invalid_request', /cursor/);
    // A field limited to a few values names them.
    assertError(
      await api.get('/api/v1/deliveries?status=everything'),
      400,
      'invalid_request',
      /^querystring\/status must be one of: "pending", "success", "failed", "disabled"$/,
    );
    assertError(
      await api.patch(`/api/v1/endpoints/${endpoint.id}`, { status: 'failing' }),
      400,
      'invalid_request',
      /^body\/status must be one of: "active", "disabled"$/,
    );
  });

  test('a body of a content type other than JSON is refused with 415 and the envelope; an empty one is no body', async () => {
    await refusedAndUnchanged(async () => {
      for (const type of [
        'application/x-www-form-urlencoded',
        'text/plain',
        'text/plain;charset=UTF-8',
        'application/xml',
      ]) {
        assertError(
          await api.post('/api/v1/applications', '{"name":"x"}', { 'content-type': type }),
          415,
          'invalid_request',
          /Content-Type/,
        );
      }
      // A route without a body schema: the text would have reached it.
      assertError(
        await api.post(`/api/v1/messages/${message.id}/replay`, 'hello', { 'content-type': 'text/plain' }),
        415,
        'invalid_request',
        /Content-Type/,
      );
      // JSON read as other bytes than were meant: compressed, or in another charset.
      assertError(
        await api.post('/api/v1/applications', '{"name":"x"}', { 'content-encoding': 'gzip' }),
        415,
        'invalid_request',
        /Content-Encoding gzip/,
      );
      assertError(
        await api.post('/api/v1/applications', '{"name":"x"}', { 'content-type': 'application/json; charset=utf-16' }),
        415,
        'invalid_request',
        /charset utf-16/,
      );
    });
    for (const type of ['application/json; charset=UTF-8', 'application/json;charset="utf8"']) {
      assert.equal(
        (await api.post('/api/v1/applications', { name: 'charset ok' }, { 'content-type': type })).status,
        201,
        type,
      );
    }
    assert.equal(
      (await api.post('/api/v1/applications', { name: 'identity' }, { 'content-encoding': 'identity' })).status,
      201,
    );
    // fetch labels an empty string body text/plain.
    const rotated = await api.post(`/api/v1/endpoints/${endpoint.id}/rotate-secret`, '', {
      'content-type': 'text/plain;charset=UTF-8',
    });
    assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
  });

  test('a body nested deeper than 100 levels is 400, whatever the route; 100 levels are accepted', async () => {
    const nested = (levels: number) => `${'{"a":'.repeat(levels - 1)}{}${'}'.repeat(levels - 1)}`;
    // The emit body is one level, so its payload may nest 99.
    const emitOf = (payloadLevels: number) =>
      `{"app_id":"${app.id}","event_type":"invoice.paid","payload":${nested(payloadLevels)}}`;
    await refusedAndUnchanged(async () => {
      for (const [path, body] of [
        ['/api/v1/messages', emitOf(100)],
        ['/api/v1/messages', emitOf(600)],
        ['/api/v1/messages/send-test', emitOf(100)],
        ['/api/v1/event-types', `{"name":"deep.event","example_json":${nested(100)}}`],
      ] as const) {
        assertError(await api.post(path, body), 400, 'invalid_request', /deeper than 100 levels/);
      }
    });
    const deepest = await api.post('/api/v1/messages', emitOf(99));
    assert.equal(deepest.status, 201, JSON.stringify(deepest.body));
  });

  test('a number too large for a double is 400, not stored as null; large and precise numbers within range are kept', async () => {
    await refusedAndUnchanged(async () => {
      for (const number of ['1e400', '-1e309', '123e99999']) {
        const body = `{"app_id":"${app.id}","event_type":"invoice.paid","payload":{"amount":{"n":[${number}]}}}`;
        assertError(await api.post('/api/v1/messages', body), 400, 'invalid_request', /number too large/);
      }
      assertError(
        await api.post('/api/v1/event-types', '{"name":"huge.event","example_json":{"n":1e999}}'),
        400,
        'invalid_request',
        /number too large/,
      );
    });
    const kept = await api.post(
      '/api/v1/messages',
      `{"app_id":"${app.id}","event_type":"invoice.paid","payload":{"big":1.7e308,"small":5e-324}}`,
    );
    assert.equal(kept.status, 201, JSON.stringify(kept.body));
  });

  test('a URL that does not decode or an over-long path parameter is 400 with the envelope; a long uid is routed', async () => {
    for (const path of [
      '/api/v1/messages/%zz',
      '/api/v1/deliveries/%E0%A4%A',
      `/api/v1/endpoints/ep_${'0'.repeat(600)}/rotate-secret`,
    ]) {
      for (const client of [api, new Client(service.url)]) {
        const reply = path.endsWith('rotate-secret') ? await client.post(path) : await client.get(path);
        assertError(reply, 400, 'invalid_request', /URL|path parameter/);
      }
    }
    const uid = 'u'.repeat(200);
    const created = await createApp(api, { name: 'Long uid', uid });
    const read = await api.get(`/api/v1/applications/${uid}`);
    assert.equal(read.status, 200, JSON.stringify(read.body));
    assert.equal(read.body.id, created.id);
  });

  test('no odd input makes any POST or PATCH route answer 5xx', async () => {
    const bodyRoutes: [method: string, path: string, fields: string[]][] = [
      ['POST', '/api/v1/messages', ['app_id', 'event_type', 'payload', 'idempotency_key']],
      ['POST', '/api/v1/messages/send-test', ['app_id', 'event_type', 'payload']],
      ['POST', `/api/v1/messages/${message.id}/replay`, []],
      ['POST', '/api/v1/applications', ['name', 'uid']],
      ['PATCH', `/api/v1/applications/${app.id}`, ['name', 'uid']],
      ['POST', '/api/v1/endpoints', ['app_id', 'url', 'description', 'event_types']],
      ['PATCH', `/api/v1/endpoints/${endpoint.id}`, ['url', 'description', 'event_types', 'status']],
      ['POST', `/api/v1/endpoints/${endpoint.id}/rotate-secret`, []],
      ['POST', `/api/v1/deliveries/${message.delivery_ids[0]}/retry`, []],
      ['POST', '/api/v1/event-types', ['name', 'description', 'example_json']],
      ['PATCH', '/api/v1/event-types/invoice.paid', ['description', 'example_json']],
      ['POST', '/api/v1/api-keys', ['name']],
    ];
    const failures: string[] = [];
    const requests: [method: string, path: string, body: unknown, headers?: Record<string, string>][] = [];
    const check = async (method: string, path: string, body: unknown, headers?: Record<string, string>) =>
      void requests.push([method, path, body, headers]);
    for (const [method, path, fields] of bodyRoutes) {
      for (const text of ODD_BODIES) await check(method, path, text);
      // A valid body with one odd field, on top of required fields that are fine.
      const valid: Record<string, unknown> =
        path === '/api/v1/messages'
          ? emitBody({})
          : path === '/api/v1/endpoints'
            ? { app_id: app.id, url: 'https://example.com' }
            : path.endsWith('send-test')
              ? { app_id: app.id }
              : path === '/api/v1/event-types'
                ? { name: 'odd.ok' }
                : {};
      for (const body of oddBodiesFor(fields)) await check(method, path, { ...valid, ...(body as object) });
    }
    for (const key of ['x'.repeat(300), ' ', 'ÿ', "' or 1=1 --"])
      await check('POST', '/api/v1/messages', emitBody({}), { 'Idempotency-Key': key });
    // Odd path parameters and query strings on every route.
    for (const [method, path] of AUTHENTICATED_ROUTES) {
      for (const id of ['%00', '%ED%A0%80', 'x'.repeat(300), '..%2f..']) {
        await check(method, concrete(path, id), method === 'GET' || method === 'DELETE' ? undefined : {});
      }
      if (method === 'GET') {
        for (const query of [
          'cursor=%00',
          'cursor=%ED%A0%80',
          'app_id=%00',
          `cursor=${'z'.repeat(300)}`,
          'limit=1&limit=2',
          'app_id[]=x',
        ]) {
          await check(method, `${concrete(path, app.id)}?${query}`, undefined);
        }
      }
    }
    // A few at a time: quicker than one by one, gentle on a loaded machine.
    for (let i = 0; i < requests.length; i += 8) {
      await Promise.all(
        requests.slice(i, i + 8).map(async ([method, path, body, headers]) => {
          const reply = await api.request(method, path, body, headers);
          if (reply.status >= 500)
            failures.push(`${method} ${path} ${JSON.stringify(body)} → ${reply.status} ${JSON.stringify(reply.body)}`);
        }),
      );
    }
    assert.deepEqual(failures, []);
  });
});
