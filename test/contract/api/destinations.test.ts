import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, type Client } from '../../support/client.js';
import { assertError, createApp } from '../../support/api.js';

// Destinations through the native API: `type`, `url` and `config` as decisions.md names them, each refusal a
// 400 naming its field with nothing stored, secrets read back "<redacted>" and kept when written back so,
// and the Svix-compatible surface serving HTTP endpoints only.

describe('destinations', () => {
  let service: TestService;
  let api: Client;
  let live: Client;
  let orgId: string;

  before(async () => {
    service = await startTestService({ HERALD_ROLE: 'api' });
    let org: { id: string };
    ({ test: api, live, org } = await bootstrap(service.url));
    orgId = org.id;
  });
  after(async () => service?.stop());

  test('bad input is a 400 naming the field, and nothing is stored', async () => {
    const app = await createApp(api);
    const post = (body: Record<string, unknown>) => api.post('/api/v1/endpoints', { app_id: app.id, ...body });
    const rabbit = { type: 'rabbitmq', url: 'amqp://127.0.0.1:5672' };
    assertError(await post({ ...rabbit, type: 'carrier-pigeon' }), 400, 'invalid_request', /type/);
    assertError(
      await post({ ...rabbit, url: 'https://127.0.0.1/x' }),
      400,
      'invalid_request',
      /^url must use amqp or amqps/,
    );
    assertError(
      await post({ url: 'https://example.com/h', config: { exchange: 'x' } }),
      400,
      'invalid_request',
      /^config is for destinations only/,
    );
    assertError(
      await post({ ...rabbit, config: { routing_key: '{tenant}' } }),
      400,
      'invalid_request',
      /^config.routing_key has an unknown placeholder \{tenant\}/,
    );
    assertError(
      await post({ ...rabbit, config: { queue: 'q' } }),
      400,
      'invalid_request',
      /^config.queue is not a field/,
    );
    assertError(
      await post({ type: 'mqtt', url: 'mqtt://127.0.0.1', config: { topic: 'a/+/b' } }),
      400,
      'invalid_request',
      /^config.topic must not contain the wildcards/,
    );
    assertError(
      await post({ type: 'kafka', url: 'kafka://127.0.0.1:9092', config: { topic: 'a b' } }),
      400,
      'invalid_request',
      /^config.topic may hold only/,
    );
    assertError(
      await post({ type: 'kafka', url: 'kafka://127.0.0.1:9092' }),
      400,
      'invalid_request',
      /^config.topic is required/,
    );
    assertError(
      await post({ ...rabbit, tls: { ca: null } }),
      400,
      'invalid_request',
      /^tls and auth are for http endpoints/,
    );
    assertError(
      await post({ type: 'redis', url: 'redis://169.254.169.254:6379' }),
      400,
      'invalid_request',
      /^url must not point at a link-local/,
    );
    // Live endpoints reach public addresses only, brokers too.
    const liveApp = await createApp(live);
    assertError(
      await live.post('/api/v1/endpoints', { app_id: liveApp.id, ...rabbit }),
      400,
      'invalid_request',
      /^url must not point at/,
    );
    const listed = await api.get(`/api/v1/endpoints?app_id=${app.id}`);
    assert.deepEqual(listed.body.data, []);
  });

  test('secrets read back redacted, are kept when sent back so, and the type is fixed', async () => {
    const app = await createApp(api);
    const created = await api.post('/api/v1/endpoints', {
      app_id: app.id,
      type: 'nats',
      url: 'nats://herald:s3cret@127.0.0.1:4222',
      config: { subject: 'orders.{app_id}.{event_type}', token: 'tok-123' },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.type, 'nats');
    assert.equal(created.body.url, 'nats://herald:<redacted>@127.0.0.1:4222');
    assert.deepEqual(created.body.config, {
      subject: 'orders.{app_id}.{event_type}',
      jetstream: true,
      token: '<redacted>',
    });
    assert.ok(!JSON.stringify(created.body).includes('s3cret') && !JSON.stringify(created.body).includes('tok-123'));

    // Written back as read: the stored password and token stay.
    const back = await api.patch(`/api/v1/endpoints/${created.body.id}`, {
      url: created.body.url,
      config: { ...created.body.config, jetstream: false },
    });
    assert.equal(back.status, 200, JSON.stringify(back.body));
    assert.equal(back.body.config.jetstream, false);
    const row = await service.store.endpoints.get({ orgId, livemode: false }, created.body.id);
    assert.deepEqual(service.store.endpoints.destinationSecrets(row!), { password: 's3cret', token: 'tok-123' });
    assert.equal(row!.url, 'nats://herald@127.0.0.1:4222');

    // A token set to null is removed; the type cannot change.
    const cleared = await api.patch(`/api/v1/endpoints/${created.body.id}`, { config: { token: null } });
    assert.equal(cleared.body.config.token, null);
    assert.equal(cleared.body.config.subject, 'webhooks.{event_type}', 'a config given replaces the whole config');
    assertError(
      await api.patch(`/api/v1/endpoints/${created.body.id}`, { type: 'redis' }),
      400,
      'invalid_request',
      /^type is fixed at creation/,
    );
    // An HTTP endpoint reads as type http with no config.
    const http = await api.post('/api/v1/endpoints', { app_id: app.id, url: 'https://example.com/h' });
    assert.equal(http.body.type, 'http');
    assert.equal(http.body.config, null);

    // The Svix-compatible surface lists HTTP endpoints only, and finds no destination.
    const svixList = await api.get(`/api/v1/app/${app.id}/endpoint`);
    assert.equal(svixList.status, 200);
    assert.deepEqual(
      svixList.body.data.map((e: { id: string }) => e.id),
      [http.body.id],
    );
    assert.equal((await api.get(`/api/v1/app/${app.id}/endpoint/${created.body.id}`)).status, 404);
  });
});
