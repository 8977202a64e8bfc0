import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService } from '../../support/service.js';
import { bootstrap, Client } from '../../support/client.js';

// Portal links made by the Svix route auth/app-portal-access: rotating the application's portal path
// ends them, as it ends the portal path itself (issue 42, finding 5).

test('rotate-portal-path ends the links app-portal-access made; other applications keep theirs', async (t) => {
  const service = await startTestService();
  t.after(() => service.stop());
  const { test: api } = await bootstrap(service.url);
  const app = (await api.post('/api/v1/applications', { name: 'Leaky' })).body;
  const neighbour = (await api.post('/api/v1/applications', { name: 'Neighbour' })).body;
  const link = async (appId: string) => {
    const made = await api.post(`/api/v1/auth/app-portal-access/${appId}`, { expiry: 365 * 86_400 });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    return made.body as { url: string; token: string };
  };
  const leaked = await link(app.id);
  const other = await link(app.id);
  const neighbours = await link(neighbour.id);
  const opens = async (token: string) => {
    const page = (await fetch(`${service.url}/portal/${token}`)).status;
    const routes = (await new Client(`${service.url}/portal/${token}`).get('/api/endpoints')).status;
    return { page, routes };
  };
  assert.deepEqual(await opens(leaked.token), { page: 200, routes: 200 });
  assert.deepEqual(await opens(other.token), { page: 200, routes: 200 });

  const rotated = await api.post(`/api/v1/applications/${app.id}/rotate-portal-path`);
  assert.equal(rotated.status, 200);

  assert.deepEqual(await opens(leaked.token), { page: 404, routes: 404 }, 'the leaked link is ended');
  assert.deepEqual(await opens(other.token), { page: 404, routes: 404 }, 'every link of the application');
  assert.deepEqual(await opens(app.portal_path.split('/').pop()), { page: 404, routes: 404 }, 'the old path');
  assert.deepEqual(await opens(rotated.body.portal_path.split('/').pop()), { page: 200, routes: 200 });
  assert.deepEqual(await opens(neighbours.token), { page: 200, routes: 200 }, "another application's link");
  // A link made after the rotation works.
  assert.deepEqual(await opens((await link(app.id)).token), { page: 200, routes: 200 });
});
