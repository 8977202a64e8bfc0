import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Script } from 'node:vm';
import { startTestService, type TestService } from '../../support/service.js';

// The operator console at /console: a static page whose script signs in with an API key (kept in the tab's
// sessionStorage) and drives the public /api/v1 routes. Its headers and assets are checked here on every
// store; a person's use of it in headless Chromium in test/browser/console/console.test.ts.

let service: TestService;

before(async () => {
  service = await startTestService();
});
after(async () => {
  await service?.stop();
});

test('the console page and its assets: a strict Content-Security-Policy, no-store, no inline script or handler', async () => {
  const page = await fetch(`${service.url}/console`);
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
  assert.equal(page.headers.get('cache-control'), 'no-store');
  assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
  const csp = page.headers.get('content-security-policy') ?? '';
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'self'(;|$)/);
  assert.match(csp, /style-src 'self'(;|$)/);
  assert.match(csp, /connect-src 'self'(;|$)/);
  assert.match(csp, /frame-ancestors 'none'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
  const html = await page.text();
  // Every script comes from a file of this origin; no inline script, handler attribute or style attribute.
  const scripts = [...html.matchAll(/<script([^>]*)>/g)].map((m) => m[1] ?? '');
  assert.deepEqual(scripts, [
    ' src="/console-assets/chart.js"',
    ' src="/console-assets/receiver-settings.js"',
    ' src="/console-assets/destination-settings.js"',
    ' src="/console-assets/console.js"',
  ]);
  assert.doesNotMatch(html, /\son[a-z]+=/i);
  assert.doesNotMatch(html, /\sstyle=/i);

  for (const [path, type] of [
    ['/console-assets/console.js', /^text\/javascript/],
    ['/console-assets/chart.js', /^text\/javascript/],
    ['/console-assets/receiver-settings.js', /^text\/javascript/],
    ['/console-assets/destination-settings.js', /^text\/javascript/],
    ['/console-assets/console.css', /^text\/css/],
  ] as const) {
    const asset = await fetch(service.url + path);
    assert.equal(asset.status, 200, path);
    assert.match(asset.headers.get('content-type') ?? '', type, path);
    assert.equal(asset.headers.get('cache-control'), 'no-store', path);
    assert.equal(asset.headers.get('x-content-type-options'), 'nosniff', path);
  }
  const script = await (await fetch(`${service.url}/console-assets/console.js`)).text();
  // The key is kept in sessionStorage only and values are inserted as text.
  assert.match(script, /sessionStorage/);
  // It parses (compiled, not run).
  assert.doesNotThrow(() => new Script(script, { filename: 'console.js' }));
  const settingsScript = await (await fetch(`${service.url}/console-assets/receiver-settings.js`)).text();
  const destinationScript = await (await fetch(`${service.url}/console-assets/destination-settings.js`)).text();
  assert.doesNotThrow(() => new Script(destinationScript, { filename: 'destination-settings.js' }));
  for (const text of [script, settingsScript, destinationScript])
    assert.doesNotMatch(
      text,
      /localStorage|document\.cookie|innerHTML|outerHTML|insertAdjacentHTML|eval\(|new Function/,
    );
  // The console is not an API route: no key needed, and not in the OpenAPI document.
  const doc = (await (await fetch(`${service.url}/api/v1/openapi.json`)).json()) as { paths: Record<string, unknown> };
  assert.ok(!Object.keys(doc.paths).some((path) => path.startsWith('/console')));
});
