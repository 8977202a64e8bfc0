import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, type Client } from '../../support/client.js';
import { assertError, createApp, emit, listAll } from '../../support/api.js';

// The event catalog: list (api-v1.md), create/get/update (additive).
describe('event types', () => {
  let service: TestService;
  let api: Client;
  let live: Client;

  before(async () => {
    service = await startTestService({ HERALD_ROLE: 'api' });
    ({ test: api, live } = await bootstrap(service.url));
  });
  after(async () => service?.stop());

  test('a new organization starts with a catalog holding invoice.paid with an example, in both environments', async () => {
    for (const client of [api, live]) {
      const reply = await client.get('/api/v1/event-types');
      assert.equal(reply.status, 200);
      assert.equal(reply.body.object, 'list');
      const paid = reply.body.data.find((e: any) => e.name === 'invoice.paid');
      assert.ok(paid, 'invoice.paid is in the catalog');
      assert.equal(typeof paid.description, 'string');
      assert.equal(paid.version, 1);
      assert.equal(typeof paid.example_json, 'object');
      assert.ok(Object.keys(paid.example_json).length > 0);
    }
  });

  test('create: 201, then usable on emit; a duplicate name is 409; bad names are 400', async () => {
    const created = await api.post('/api/v1/event-types', {
      name: 'order.shipped',
      description: 'An order left the warehouse',
      example_json: { order_id: 'o_1' },
    });
    assert.equal(created.status, 201);
    assert.equal(created.body.name, 'order.shipped');
    assert.equal(created.body.description, 'An order left the warehouse');
    assert.equal(created.body.version, 1);
    assert.deepEqual(created.body.example_json, { order_id: 'o_1' });
    const app = await createApp(api);
    assert.equal((await emit(api, app.id, 'order.shipped')).event_type, 'order.shipped');

    assertError(await api.post('/api/v1/event-types', { name: 'order.shipped' }), 409, 'conflict', /order\.shipped/);
    assertError(await api.post('/api/v1/event-types', {}), 400, 'invalid_request', /name/);
    assertError(await api.post('/api/v1/event-types', { name: 'has space' }), 400, 'invalid_request', /name/);
    assertError(
      await api.post('/api/v1/event-types', { name: 'x.y', example_json: [1] }),
      400,
      'invalid_request',
      /example_json/,
    );
    assertError(await api.get('/api/v1/event-types/x.y'), 404, 'not_found');
  });

  test('get by name; patch description keeps the version, a new example bumps it', async () => {
    await api.post('/api/v1/event-types', { name: 'user.deleted', example_json: { id: 1 } });
    const read = await api.get('/api/v1/event-types/user.deleted');
    assert.equal(read.status, 200);
    assert.equal(read.body.version, 1);

    const described = await api.patch('/api/v1/event-types/user.deleted', { description: 'Gone' });
    assert.equal(described.status, 200);
    assert.equal(described.body.description, 'Gone');
    assert.equal(described.body.version, 1);

    const sameExample = await api.patch('/api/v1/event-types/user.deleted', { example_json: { id: 1 } });
    assert.equal(sameExample.body.version, 1);
    const newExample = await api.patch('/api/v1/event-types/user.deleted', { example_json: { id: 2 } });
    assert.equal(newExample.body.version, 2);
    assert.deepEqual(newExample.body.example_json, { id: 2 });
    assert.equal((await api.get('/api/v1/event-types/user.deleted')).body.version, 2);

    assertError(await api.patch('/api/v1/event-types/no.such', { description: 'x' }), 404, 'not_found');
    assertError(
      await api.patch('/api/v1/event-types/user.deleted', { example_json: 'text' }),
      400,
      'invalid_request',
      /example_json/,
    );
  });

  test('list pages by name without duplicates or gaps', async () => {
    const { test: fresh } = await bootstrap(service.url, 'Catalog paging');
    for (let i = 0; i < 7; i++)
      assert.equal((await fresh.post('/api/v1/event-types', { name: `paging.e${i}` })).status, 201);
    const everything = (await fresh.get('/api/v1/event-types?limit=250')).body.data.map((e: any) => e.name);
    assert.equal(everything.length, 10);
    for (const limit of [1, 3, 10]) {
      assert.deepEqual(
        (await listAll(fresh, '/api/v1/event-types', limit)).map((e) => e.name),
        everything,
        `limit=${limit}`,
      );
    }
  });
});
