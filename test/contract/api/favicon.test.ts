import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService } from '../../support/service.js';
import { bootstrap } from '../../support/client.js';

// Herald's icon: /favicon.svg, which the console, the portal and /docs link, and /favicon.ico, which a
// browser asks for a page that names none; no page asks for an icon that is missing.
test('/favicon.ico and /favicon.svg answer the icon without a key; the console and portal pages link it', async (t) => {
  const service = await startTestService({ HERALD_ROLE: 'api' });
  t.after(() => service.stop());
  for (const path of ['/favicon.ico', '/favicon.svg']) {
    const reply = await fetch(service.url + path);
    assert.equal(reply.status, 200, path);
    assert.equal(reply.headers.get('content-type'), 'image/svg+xml');
    assert.match(await reply.text(), /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  }
  const doc = (await (await fetch(`${service.url}/api/v1/openapi.json`)).json()) as { paths: object };
  assert.deepEqual(
    Object.keys(doc.paths).filter((path) => path.startsWith('/favicon')),
    [],
  );

  const { test: api } = await bootstrap(service.url);
  const app = await api.post('/api/v1/applications', { name: 'Icons' });
  for (const path of ['/console', app.body.portal_path]) {
    const html = await (await fetch(service.url + path)).text();
    const icon = /<link rel="icon" type="image\/svg\+xml" href="([^"]+)">/.exec(html)?.[1];
    assert.equal(icon, '/favicon.svg', `${path} links the icon`);
  }
});
