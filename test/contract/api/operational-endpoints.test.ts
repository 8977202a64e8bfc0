import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, type Client } from '../../support/client.js';
import { assertError, createApp, createEndpoint } from '../../support/api.js';

// Rotating an operational endpoint's signing secret (the console's "Rotate secret"): its own route, which
// reaches operational endpoints only, as the endpoint routes reach customer endpoints only.

let service: TestService;
let api: Client;

before(async () => {
  service = await startTestService();
  ({ test: api } = await bootstrap(service.url));
});
after(async () => {
  await service?.stop();
});

test('rotate-secret of an operational endpoint: a new whsec_ secret, the previous one signing for the grace period', async () => {
  const created = await api.post('/api/v1/operational-endpoints', { url: 'https://ops.example.com/pager' });
  assert.equal(created.status, 201);
  const rotated = await api.post(`/api/v1/operational-endpoints/${created.body.id}/rotate-secret`);
  assert.equal(rotated.status, 200);
  assert.equal(rotated.body.id, created.body.id);
  assert.match(rotated.body.signing_secret, /^whsec_/);
  assert.notEqual(rotated.body.signing_secret, created.body.signing_secret);
  assert.ok(Date.parse(rotated.body.previous_valid_until) > Date.now());

  // Each route reaches its own kind of endpoint only.
  const app = await createApp(api);
  const customer = await createEndpoint(api, app.id);
  assertError(await api.post(`/api/v1/operational-endpoints/${customer.id}/rotate-secret`), 404, 'not_found');
  assertError(await api.post(`/api/v1/endpoints/${created.body.id}/rotate-secret`), 404, 'not_found');
  assertError(await api.post('/api/v1/operational-endpoints/ep_doesnotexist/rotate-secret'), 404, 'not_found');
});
