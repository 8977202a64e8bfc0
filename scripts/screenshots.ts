// npm run screenshots: the README's pictures (docs/images/*.png) of the console's overview, an endpoint's
// page, a delivery's inspector and the customer portal, taken in headless Chromium from a service on a
// fresh embedded store. Its receivers answer as real ones do (one is down), so the pages show what an
// operator sees when something goes wrong. Each picture is the window, not the whole page, to stay small.
import { statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Page } from 'playwright-core';
import { bootstrap } from '../test/support/client.js';
import { type Answer, eventually, Receiver } from '../test/support/receiver.js';
import { startTestService } from '../test/support/service.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const out = join(root, 'docs', 'images');
const MAX_BYTES = 200 * 1024;

const service = await startTestService({ HERALD_RETRY_SCHEDULE: '0s' });
const receiver = await new Receiver().start();
receiver.respond = (request): Answer =>
  request.path.startsWith('/crm')
    ? { status: 503, headers: { 'content-type': 'application/json' }, body: '{"error":"crm is down for maintenance"}' }
    : { status: 200, headers: { 'content-type': 'application/json' }, body: '{"received":true}' };
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
try {
  const org = await bootstrap(service.url, 'Acme Payments');
  const api = org.test;
  const app = (await api.post('/api/v1/applications', { name: 'Globex Corporation', uid: 'globex' })).body;
  const endpoints = [];
  for (const [path, description, types] of [
    ['/billing', 'Billing service', ['invoice.paid', 'invoice.created']],
    ['/crm', 'CRM sync', []],
    ['/analytics/ingest', 'Analytics', ['customer.created']],
  ] as const) {
    endpoints.push(
      (
        await api.post('/api/v1/endpoints', {
          app_id: app.id,
          url: receiver.url + path,
          description,
          event_types: types,
        })
      ).body,
    );
  }
  const types = ['invoice.paid', 'invoice.created', 'customer.created'];
  for (let i = 0; i < 36; i++) {
    const eventType = types[i % types.length]!;
    await api.post('/api/v1/messages', {
      app_id: app.id,
      event_type: eventType,
      payload: { id: `${eventType.split('.')[0]}_${1000 + i}`, amount: 1250 + i * 10, currency: 'usd' },
    });
  }
  const crm = endpoints[1]!;
  await eventually(
    async () => (await api.get(`/api/v1/deliveries?endpoint_id=${crm.id}&status=failed&limit=1`)).body.data.length > 0,
    20_000,
    'the failed deliveries',
  );
  await eventually(
    async () => (await api.get('/api/v1/deliveries?status=pending&limit=1')).body.data.length === 0,
    20_000,
    'every delivery settled',
  );
  const [failed] = (await api.get(`/api/v1/deliveries?endpoint_id=${crm.id}&status=failed&limit=1`)).body.data;

  await mkdir(out, { recursive: true });
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 640 } })).newPage();
  await page.goto(`${service.url}/console`);
  await page.fill('#sign-in input[name=key]', org.raw.test_key.key);
  await page.click('#sign-in button[type=submit]');
  await page.waitForSelector('#overview-endpoints li');
  await settle(page);
  await shot(page, 'console-overview.png');

  await page.setViewportSize({ width: 1280, height: 1000 });
  await page.goto(`${service.url}/console#/endpoints/${crm.id}`);
  await page.waitForSelector('#endpoint-chart svg');
  await page.waitForFunction(
    () => !document.querySelector('#endpoint-deliveries .last-answer')?.textContent?.startsWith('…'),
  );
  await settle(page);
  await shot(page, 'console-endpoint.png');

  await page.goto(`${service.url}/console#/deliveries/${failed.id}`);
  await page.waitForSelector('#delivery-inspector pre.response-body');
  await settle(page);
  await shot(page, 'console-delivery.png');

  await page.goto(service.url + app.portal_path);
  await page.waitForSelector('#messages tbody td.delivered .mark');
  await page.click(`#endpoints tbody tr[data-endpoint-id="${crm.id}"] a.open-endpoint`);
  await page.waitForSelector('#stats-chart svg');
  await page.evaluate(() => window.scrollTo(0, 0));
  await settle(page);
  await shot(page, 'portal.png');
} finally {
  await browser.close();
  await receiver.stop();
  await service.stop();
}

/** Waits for the rows' reads that fill in after a view renders (ratios, last answers). */
async function settle(page: Page): Promise<void> {
  await page.waitForFunction(
    () => ![...document.querySelectorAll('td, span')].some((node) => node.textContent === '…'),
  );
  await page.waitForTimeout(200);
}

async function shot(page: Page, name: string): Promise<void> {
  const path = join(out, name);
  await page.screenshot({ path });
  const size = statSync(path).size;
  console.log(`${path}: ${Math.round(size / 1024)} KB`);
  if (size > MAX_BYTES) throw new Error(`${name} is ${size} bytes, over ${MAX_BYTES}`);
}
