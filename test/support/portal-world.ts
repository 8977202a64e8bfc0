import { after, before } from 'node:test';
import { startTestService, type TestService } from './service.js';
import { bootstrap, Client } from './client.js';
import { Receiver } from './receiver.js';

// The world of the customer portal's tests (test/contract/portal/ and test/browser/portal/): a service whose
// portals may reach the loopback receiver, and an organization's Test and Live keys. setUpPortalWorld()
// starts it before a file's tests and stops it after; the bindings below are set once it has started.

export let service: TestService;
export let receiver: Receiver;
export let api: Client;
export let liveApi: Client;

/** Starts the world before the calling file's tests, and stops it after them. */
export function setUpPortalWorld(): void {
  before(async () => {
    // The customers' receivers here live on loopback, which a portal may only reach when the operator
    // allow-lists it (endpoints added in a portal must reach public addresses).
    service = await startTestService({ HERALD_SSRF_ALLOW: '127.0.0.1' });
    receiver = await new Receiver().start();
    ({ test: api, live: liveApi } = await bootstrap(service.url));
  });
  after(async () => {
    await service?.stop();
    await receiver?.stop();
  });
}

/** A Test application with one endpoint on the receiver, and a client of its portal. */
export async function appWithEndpoint(name: string) {
  const app = (await api.post('/api/v1/applications', { name })).body;
  const endpoint = (await api.post('/api/v1/endpoints', { app_id: app.id, url: `${receiver.url}/${name}` })).body;
  return { app, endpoint, portal: new Client(service.url + app.portal_path) };
}

/** An application with `count` endpoints, and their ids, oldest first. */
export async function appWithEndpoints(name: string, count: number) {
  const { app, endpoint, portal } = await appWithEndpoint(name);
  const ids = [endpoint.id as string];
  for (let i = 1; i < count; i++)
    ids.push((await api.post('/api/v1/endpoints', { app_id: app.id, url: `${receiver.url}/${name}-${i}` })).body.id);
  return { app, portal, ids };
}
