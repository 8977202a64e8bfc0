import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService } from '../../support/service.js';

// GET /, the address the README and the start-up line print: a browser is sent to the console, an API
// client gets an index of the service's addresses, and each address it names answers.
test('GET / sends a browser to the console and answers a client with an index of addresses that answer', async (t) => {
  const service = await startTestService({ HERALD_ROLE: 'api' });
  t.after(() => service.stop());

  const browser = await fetch(`${service.url}/`, {
    headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' },
    redirect: 'manual',
  });
  assert.equal(browser.status, 302);
  assert.equal(new URL(browser.headers.get('location')!, `${service.url}/`).pathname, '/console');

  for (const accept of ['application/json', '*/*', undefined]) {
    const client = await fetch(`${service.url}/`, accept ? { headers: { accept } } : {});
    assert.equal(client.status, 200, String(accept));
    assert.match(client.headers.get('content-type') ?? '', /application\/json/);
    assert.match(client.headers.get('vary') ?? '', /accept/i);
    const index = (await client.json()) as Record<string, string>;
    assert.deepEqual(Object.keys(index).sort(), ['console', 'docs', 'health', 'name', 'openapi']);
    for (const path of [index.console!, index.docs!, index.openapi!, index.health!]) {
      const reply = await fetch(service.url + path);
      assert.equal(reply.status, 200, `${path} answers`);
    }
  }
  const doc = (await (await fetch(`${service.url}/api/v1/openapi.json`)).json()) as { paths: object };
  assert.ok(!('/' in doc.paths), 'not an operation of the API');
});
