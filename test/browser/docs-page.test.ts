import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestService, type TestService } from '../support/service.js';
import { launchBrowser } from '../support/browser.js';

// GET /docs, the API reference page rendered by Swagger UI, in headless Chromium (test/support/browser.ts).
// What it serves and to whom: test/contract/api/docs-page.test.ts.
describe('the /docs reference page', () => {
  let service: TestService;

  before(async () => {
    // A plan of 2 requests per second, as in the contract file: the page's many requests must not hit it.
    service = await startTestService({ HERALD_ROLE: 'api', HERALD_PLANS: 'tiny:2', HERALD_DEFAULT_PLAN: 'tiny' });
  });
  after(async () => service?.stop());

  // In headless Chromium: the root lands on the console; the page renders the operations, and no request
  // leaves 127.0.0.1.
  test('in a browser: / opens the console; /docs renders the operations with no request to another host', async (t) => {
    const browser = await launchBrowser(t);
    const page = await browser.newPage();
    const outside: string[] = [];
    await page.route('**/*', (route) => {
      const url = new URL(route.request().url());
      if (url.protocol === 'data:' || url.hostname === '127.0.0.1') return route.continue();
      outside.push(url.toString());
      return route.abort();
    });
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));

    // The root, opened in a browser, lands on the console's sign-in.
    await page.goto(`${service.url}/`);
    assert.equal(new URL(page.url()).pathname, '/console');
    await page.waitForSelector('#sign-in input[name=key]');

    await page.goto(`${service.url}/docs`);
    await page.waitForSelector('.opblock-summary-path');
    const paths = await page.locator('.opblock-summary-path').allTextContents();
    assert.ok(
      paths.some((path) => path.replace(/\u200b/g, '') === '/api/v1/messages'),
      `operations shown: ${paths.length}`,
    );
    assert.match((await page.locator('.info .title').textContent()) ?? '', /Herald API/);

    const dir = mkdtempSync(join(tmpdir(), 'herald-docs-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const shot = join(dir, 'docs.png');
    await page.screenshot({ path: shot, fullPage: true });
    assert.ok(statSync(shot).size > 0);

    assert.deepEqual(outside, [], 'requests to other hosts');
    assert.deepEqual(problems, [], 'console errors (a CSP violation shows here)');
  });
});
