import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../support/paths.js';
import { startTestService, type TestService } from '../../support/service.js';

// GET /docs: the API reference page, rendered by Swagger UI from the OpenAPI document, with every
// script, style and image served by the service itself; no key, no rate limit. The page in headless Chromium:
// test/browser/docs-page.test.ts.
describe('the /docs reference page', () => {
  let service: TestService;

  before(async () => {
    // A plan of 2 requests per second: the page and its assets, fetched many times, must not hit it.
    service = await startTestService({ HERALD_ROLE: 'api', HERALD_PLANS: 'tiny:2', HERALD_DEFAULT_PLAN: 'tiny' });
  });
  after(async () => service?.stop());

  /** The URLs of the page's scripts, styles and icons, resolved against the page's address. */
  const assetsOf = (html: string, base: string) =>
    [...html.matchAll(/<(?:script|link)\b[^>]*?\b(?:src|href)="([^"]+)"/g)].map((m) => new URL(m[1]!, base));

  test('answers HTML without a key, and every asset it names loads from the service (200)', async () => {
    for (const path of ['/docs', '/docs/']) {
      const page = await fetch(service.url + path);
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
      const html = await page.text();
      assert.match(html, /<div id="swagger-ui">/);
      const assets = assetsOf(html, service.url + path);
      assert.ok(assets.length >= 5, `assets: ${assets.join(', ')}`);
      assert.ok(assets.some((url) => url.pathname.endsWith('.js')));
      assert.ok(assets.some((url) => url.pathname.endsWith('.css')));
      for (const url of assets) {
        assert.equal(url.origin, new URL(service.url).origin, `${url} is same-origin`);
        const asset = await fetch(url);
        assert.equal(asset.status, 200, `${url}`);
        assert.ok((await asset.arrayBuffer()).byteLength > 0, `${url} is not empty`);
      }
    }
    // The document the page renders is this service's.
    const document = await fetch(`${service.url}/docs/json`);
    assert.equal(document.status, 200);
    const served = (await document.json()) as { paths: Record<string, unknown> };
    assert.ok(served.paths['/api/v1/messages']);
  });

  test("is Herald's page: its title, logo and icon, and nothing of fastify's", async () => {
    const html = await (await fetch(`${service.url}/docs`)).text();
    assert.match(html, /<title>Herald API<\/title>/);
    assert.doesNotMatch(html, /favicon-(16|32)x\d+\.png|Swagger UI<\/title>/);
    const icon = /<link rel="icon" type="image\/svg\+xml" href="([^"]+)"/.exec(html)?.[1];
    assert.ok(icon, 'the page names its icon');
    const served = await fetch(new URL(icon, `${service.url}/docs`));
    assert.equal(served.status, 200);
    assert.match(await served.text(), /<svg[^>]*>.*#4338ca/);
    // The top bar's logo is set by the page's initializer script: Herald's, and not fastify's.
    const initializer = await (await fetch(`${service.url}/docs/static/swagger-initializer.js`)).text();
    const logo = /img\.src = 'data:image\/svg\+xml;base64,([^']+)'/.exec(initializer)?.[1];
    assert.ok(logo, 'the initializer replaces the logo');
    assert.match(Buffer.from(logo, 'base64').toString('utf8'), />Herald<\/text>/);
    const fastifyLogoFile = join(REPO_ROOT, 'node_modules/@fastify/swagger-ui/static/logo.svg');
    const fastifyLogo = readFileSync(fastifyLogoFile).toString('base64');
    assert.ok(!initializer.includes(fastifyLogo.slice(0, 200)), "fastify's logo is not on the page");
  });

  test('sends a same-origin Content-Security-Policy on /docs only', async () => {
    const csp = (await fetch(`${service.url}/docs`)).headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'self'/);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.doesNotMatch(csp, /https?:|validator\.swagger\.io/);
    const openapi = await fetch(`${service.url}/api/v1/openapi.json`);
    assert.equal(openapi.headers.get('content-security-policy'), null);
    // Read to its end: a large answer left unread holds its connection open, and the service's stop waits for it.
    await openapi.arrayBuffer();
  });

  test('is not counted against rate limits, with or without a key', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 15; i++) {
      const headers: Record<string, string> = i % 2 === 0 ? {} : { authorization: 'Bearer sk_test_notarealkey' };
      statuses.push((await fetch(`${service.url}/docs`, { headers })).status);
      statuses.push((await fetch(`${service.url}/docs/static/swagger-initializer.js`, { headers })).status);
    }
    assert.deepEqual(new Set(statuses), new Set([200]));
  });

  test('the page and its assets are not operations of the OpenAPI document', async () => {
    const doc = (await (await fetch(`${service.url}/api/v1/openapi.json`)).json()) as { paths: object };
    assert.deepEqual(
      Object.keys(doc.paths).filter((path) => path.startsWith('/docs')),
      [],
    );
  });
});
