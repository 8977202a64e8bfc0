import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService } from '../support/service.js';
import { bootstrap } from '../support/client.js';
import { Receiver } from '../support/receiver.js';

// The README's walkthrough, as a newcomer would do it: bootstrap, application, endpoint, emit, read back.
test('bootstrap → application → endpoint → emit → delivered and readable', async (t) => {
  const service = await startTestService();
  const receiver = await new Receiver().start();
  t.after(async () => {
    await service.stop();
    await receiver.stop();
  });
  const { test: api } = await bootstrap(service.url);

  const app = await api.post('/api/v1/applications', { name: 'Acme' });
  assert.equal(app.status, 201);
  assert.match(app.body.id, /^app_/);
  assert.match(app.body.portal_path, /^\/portal\/.{40,}/);

  const endpoint = await api.post('/api/v1/endpoints', { app_id: app.body.id, url: `${receiver.url}/hook` });
  assert.equal(endpoint.status, 201);
  assert.match(endpoint.body.signing_secret, /^whsec_/);
  assert.equal(endpoint.body.status, 'active');

  const emitted = await api.post('/api/v1/messages', {
    app_id: app.body.id,
    event_type: 'invoice.paid',
    payload: { amount: 42 },
  });
  assert.equal(emitted.status, 201);
  assert.match(emitted.body.id, /^evt_/);
  assert.equal(emitted.body.idempotent, false);
  assert.equal(emitted.body.delivery_ids.length, 1);

  await receiver.waitFor(1);
  assert.deepEqual(JSON.parse(receiver.received[0]!.body).data, { amount: 42 });

  const message = await api.get(`/api/v1/messages/${emitted.body.id}`);
  assert.equal(message.status, 200);
  assert.deepEqual(Object.keys(message.body).sort(), [
    'app_id',
    'channels',
    'created_at',
    'event_type',
    'id',
    'object',
    'tags',
  ]);

  const delivery = await api.get(`/api/v1/deliveries/${emitted.body.delivery_ids[0]}`);
  assert.equal(delivery.status, 200);
  assert.equal(delivery.body.object, 'delivery');
  assert.equal(delivery.body.message_id, emitted.body.id);
});
