import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, Client } from '../../support/client.js';
import { assertError, createApp, emit, listAll } from '../../support/api.js';
import { SCHEMA_CACHE_MS } from '../../../src/store/event-types.js';
import { parseMetrics } from '../../support/scrape.js';

// Event schemas (decisions.md): a catalog entry's optional JSON Schema, checked on emit and send-test.
const AMOUNT_SCHEMA = {
  type: 'object',
  properties: { amount: { type: 'integer', minimum: 0 }, currency: { type: 'string', pattern: '^[a-z]{3}$' } },
  required: ['amount'],
};

describe('event schemas', () => {
  let service: TestService;
  let api: Client;
  let appId: string;

  before(async () => {
    service = await startTestService({ HERALD_ROLE: 'api' });
    ({ test: api } = await bootstrap(service.url));
    appId = (await createApp(api)).id;
  });
  after(async () => service?.stop());

  const messageCount = async () => (await listAll(api, '/api/v1/messages', 50)).length;
  const entry = async (name: string) => (await api.get(`/api/v1/event-types/${name}`)).body;

  test('create with a schema: reads return it; entries without one read null', async () => {
    const created = await api.post('/api/v1/event-types', {
      name: 'charge.made',
      example_json: { amount: 5, currency: 'eur' },
      schema: AMOUNT_SCHEMA,
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(created.body.schema, AMOUNT_SCHEMA);
    assert.deepEqual((await entry('charge.made')).schema, AMOUNT_SCHEMA);
    const listed = (await listAll(api, '/api/v1/event-types', 50)).find((e) => e.name === 'charge.made');
    assert.deepEqual(listed.schema, AMOUNT_SCHEMA);
    assert.equal((await entry('invoice.paid')).schema, null);
  });

  test('an example that does not satisfy the schema is refused on create, naming pointer and rule; nothing is stored', async () => {
    assertError(
      await api.post('/api/v1/event-types', {
        name: 'charge.bad',
        example_json: { amount: 1.5 },
        schema: AMOUNT_SCHEMA,
      }),
      400,
      'invalid_request',
      /example_json\/amount \(at \/amount\) must be integer.*"type"/,
    );
    // Without an example the example is {}, which lacks the required amount.
    assertError(
      await api.post('/api/v1/event-types', { name: 'charge.bad', schema: AMOUNT_SCHEMA }),
      400,
      'invalid_request',
      /\/amount.*required/,
    );
    assertError(await api.get('/api/v1/event-types/charge.bad'), 404, 'not_found');
  });

  test('update: a schema the kept example fails, or an example the kept schema fails, is refused and changes nothing', async () => {
    await api.post('/api/v1/event-types', { name: 'refund.made', example_json: { amount: 'ten' } });
    const before = await entry('refund.made');
    assertError(
      await api.patch('/api/v1/event-types/refund.made', { schema: AMOUNT_SCHEMA }),
      400,
      'invalid_request',
      /example_json\/amount \(at \/amount\) must be integer/,
    );
    assert.deepEqual(await entry('refund.made'), before);

    const fixed = await api.patch('/api/v1/event-types/refund.made', {
      schema: AMOUNT_SCHEMA,
      example_json: { amount: 10 },
    });
    assert.equal(fixed.status, 200, JSON.stringify(fixed.body));
    assert.equal(fixed.body.version, before.version + 1);
    const kept = await entry('refund.made');
    assertError(
      await api.patch('/api/v1/event-types/refund.made', { example_json: { amount: -1 } }),
      400,
      'invalid_request',
      /example_json\/amount \(at \/amount\) must be >= 0.*"minimum"/,
    );
    assert.deepEqual(await entry('refund.made'), kept);

    // A description alone keeps the version; null removes the schema and bumps it.
    assert.equal((await api.patch('/api/v1/event-types/refund.made', { description: 'd' })).body.version, kept.version);
    const removed = await api.patch('/api/v1/event-types/refund.made', { schema: null });
    assert.equal(removed.body.schema, null);
    assert.equal(removed.body.version, kept.version + 1);
  });

  test('a schema that is not a valid JSON Schema, or a hostile one, is 400 and stores nothing', async () => {
    const cases: [object, RegExp][] = [
      [{ type: 'whole-number' }, /schema\/type/],
      [{ type: 'object', required: 'amount' }, /schema\/required/],
      [{ $schema: 'http://json-schema.org/draft-07/schema#' }, /2020-12/],
      [{ type: 'object', properties: { a: { type: 'string', pattern: '(a)\\1' } } }, /back-reference/],
      [{ $ref: '#' }, /refers back to itself/],
      [
        { type: 'object', properties: { tags: { type: 'array', uniqueItems: true } } },
        /tags\/uniqueItems needs maxItems/,
      ],
      [{ type: 'string', pattern: '([' }, /schema\/pattern: pattern "\(\[" cannot run/],
      [{ $ref: 'https://example.com/schemas/evil.json' }, /does not compile/],
      [{ type: 'object', description: 'x'.repeat(70_000) }, /at most 65536/],
    ];
    // A remote reference is never fetched: the check answers without a request leaving the service.
    let fetched = 0;
    const remote: Server = createServer((_req, res) => {
      fetched++;
      res.end('{}');
    });
    await new Promise<void>((resolve) => remote.listen(0, '127.0.0.1', resolve));
    const remoteRef = `http://127.0.0.1:${(remote.address() as AddressInfo).port}/schema.json`;
    cases.push([{ $ref: remoteRef }, /does not compile/]);
    try {
      for (const [schema, message] of cases) {
        assertError(
          await api.post('/api/v1/event-types', { name: 'hostile.one', schema }),
          400,
          'invalid_request',
          message,
        );
        assertError(await api.patch('/api/v1/event-types/charge.made', { schema }), 400, 'invalid_request', message);
      }
    } finally {
      remote.close();
    }
    assert.equal(fetched, 0);
    assertError(await api.get('/api/v1/event-types/hostile.one'), 404, 'not_found');
    assert.deepEqual((await entry('charge.made')).schema, AMOUNT_SCHEMA);
  });

  test('emit: a valid payload is 201; an invalid one is 400 naming pointer and rule, and stores nothing', async () => {
    const before = await messageCount();
    const ok = await emit(api, appId, 'charge.made', { amount: 7, currency: 'usd' });
    assert.equal(ok.event_type, 'charge.made');
    assert.equal(await messageCount(), before + 1);

    const failures: [object, RegExp][] = [
      [{ amount: 1.5 }, /payload\/amount \(at \/amount\) must be integer \(rule "type"/],
      [{ currency: 'usd' }, /payload\/amount \(at \/amount\) must have required property 'amount' \(rule "required"/],
      [{ amount: 1, currency: 'USD' }, /payload\/currency \(at \/currency\) must match pattern .*\(rule "pattern"/],
    ];
    for (const [payload, message] of failures) {
      const reply = await api.post(
        '/api/v1/messages',
        { app_id: appId, event_type: 'charge.made', payload },
        { 'idempotency-key': `k-${JSON.stringify(payload)}` },
      );
      assertError(reply, 400, 'invalid_request', message);
      assert.match(reply.body.error.message, /charge\.made/);
    }
    assert.equal(await messageCount(), before + 1);
    // The refused idempotency keys were not taken: a valid emit with one creates a message.
    const retried = await api.post(
      '/api/v1/messages',
      { app_id: appId, event_type: 'charge.made', payload: { amount: 2 } },
      { 'idempotency-key': `k-${JSON.stringify({ amount: 1.5 })}` },
    );
    assert.equal(retried.status, 201);
    assert.equal(retried.body.idempotent, false);
  });

  test('send-test validates a given payload the same way; the catalog example passes', async () => {
    const before = await messageCount();
    const sample = await api.post('/api/v1/messages/send-test', { app_id: appId, event_type: 'charge.made' });
    assert.equal(sample.status, 202, JSON.stringify(sample.body));
    const given = await api.post('/api/v1/messages/send-test', {
      app_id: appId,
      event_type: 'charge.made',
      payload: { amount: 3 },
    });
    assert.equal(given.status, 202);
    assertError(
      await api.post('/api/v1/messages/send-test', {
        app_id: appId,
        event_type: 'charge.made',
        payload: { amount: 'three' },
      }),
      400,
      'invalid_request',
      /payload\/amount \(at \/amount\) must be integer \(rule "type"/,
    );
    assert.equal(await messageCount(), before + 2);
  });

  test('an entry without a schema accepts any object; an unknown event type is refused as before', async () => {
    await emit(api, appId, 'invoice.paid', { anything: [1, { deep: true }], amount: 'not a number' });
    await emit(api, appId, 'invoice.paid', {});
    assertError(
      await api.post('/api/v1/messages', { app_id: appId, event_type: 'no.such', payload: {} }),
      400,
      'invalid_request',
      /no\.such/,
    );
  });

  test('emits reuse the compiled schema: no compilation per emit', async () => {
    const schemaCompilations = async () =>
      parseMetrics(await (await fetch(`${service.url}/metrics`)).text()).value(
        'herald_event_schema_compilations_total',
      );
    await emit(api, appId, 'charge.made', { amount: 1 });
    const compiled = await schemaCompilations();
    for (let i = 0; i < 20; i++) await emit(api, appId, 'charge.made', { amount: i });
    for (let i = 0; i < 5; i++)
      assertError(
        await api.post('/api/v1/messages', { app_id: appId, event_type: 'charge.made', payload: { amount: -i - 1 } }),
        400,
        'invalid_request',
        /minimum/,
      );
    // Past the lookup cache's time the entry is read again, but its version is unchanged: no compilation.
    await new Promise((resolve) => setTimeout(resolve, SCHEMA_CACHE_MS + 100));
    await emit(api, appId, 'charge.made', { amount: 1 });
    assert.equal(await schemaCompilations(), compiled);
  });

  test('a schema update applies to emits (at once in this process, within the cache time in any)', async () => {
    await api.post('/api/v1/event-types', { name: 'plan.changed', example_json: { plan: 'pro' } });
    await emit(api, appId, 'plan.changed', { plan: 42 });
    const updated = await api.patch('/api/v1/event-types/plan.changed', {
      schema: { type: 'object', properties: { plan: { enum: ['free', 'pro'] } } },
    });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    await new Promise((resolve) => setTimeout(resolve, SCHEMA_CACHE_MS + 100));
    assertError(
      await api.post('/api/v1/messages', { app_id: appId, event_type: 'plan.changed', payload: { plan: 42 } }),
      400,
      'invalid_request',
      /payload\/plan \(at \/plan\) must be equal to one of the allowed values \(rule "enum"/,
    );
    await emit(api, appId, 'plan.changed', { plan: 'free' });
    // Removing the schema frees the payload again.
    await api.patch('/api/v1/event-types/plan.changed', { schema: null });
    await new Promise((resolve) => setTimeout(resolve, SCHEMA_CACHE_MS + 100));
    await emit(api, appId, 'plan.changed', { plan: 42 });
  });

  test('another API process keeps an event type schema for the cache time, then reads the change', async () => {
    // A second service on the same database: its emits use the schema it read, without reading it again,
    // until SCHEMA_CACHE_MS has passed since it read it.
    const other = await startTestService({ HERALD_ROLE: 'api' }, service.database);
    try {
      const otherApi = new Client(other.url, api.key);
      await api.post('/api/v1/event-types', { name: 'seat.added', example_json: { seats: 1 } });
      const readAt = Date.now();
      await emit(otherApi, appId, 'seat.added', { seats: 'many' });
      const changed = await api.patch('/api/v1/event-types/seat.added', {
        schema: { type: 'object', properties: { seats: { type: 'integer' } } },
      });
      assert.equal(changed.status, 200, JSON.stringify(changed.body));
      // The change applies at once where it was made.
      assertError(
        await api.post('/api/v1/messages', { app_id: appId, event_type: 'seat.added', payload: { seats: 'many' } }),
        400,
        'invalid_request',
        /payload\/seats \(at \/seats\) must be integer/,
      );
      const early = await otherApi.post('/api/v1/messages', {
        app_id: appId,
        event_type: 'seat.added',
        payload: { seats: 'many' },
      });
      // Unless this machine was too slow to tell: the other process read the entry at readAt at the earliest.
      if (Date.now() - readAt < SCHEMA_CACHE_MS - 100)
        assert.equal(early.status, 201, 'the other process still uses what it read');
      await new Promise((resolve) => setTimeout(resolve, SCHEMA_CACHE_MS + 100));
      assertError(
        await otherApi.post('/api/v1/messages', {
          app_id: appId,
          event_type: 'seat.added',
          payload: { seats: 'many' },
        }),
        400,
        'invalid_request',
        /payload\/seats \(at \/seats\) must be integer/,
      );
    } finally {
      await other.stop();
    }
  });

  test('uniqueItems with a small maxItems, or over scalar items, is accepted', async () => {
    for (const [name, schema] of [
      ['tags.bounded', { type: 'object', properties: { tags: { type: 'array', uniqueItems: true, maxItems: 10 } } }],
      [
        'tags.scalar',
        { type: 'object', properties: { tags: { type: 'array', uniqueItems: true, items: { type: 'string' } } } },
      ],
    ] as const) {
      const created = await api.post('/api/v1/event-types', { name, schema });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      await emit(api, appId, name, { tags: ['a', 'b'] });
      assertError(
        await api.post('/api/v1/messages', { app_id: appId, event_type: name, payload: { tags: ['a', 'a'] } }),
        400,
        'invalid_request',
        /payload\/tags \(at \/tags\) must NOT have duplicate items.*"uniqueItems"/,
      );
    }
  });
});
