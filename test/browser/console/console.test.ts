import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { startTestService, type TestService } from '../../support/service.js';
import { chooseAction, launchBrowser } from '../../support/browser.js';
import { bootstrap, type Client } from '../../support/client.js';
import { eventually, Receiver } from '../../support/receiver.js';
import { makeCa } from '../../support/certificates.js';

// The operator console at /console, used as a person would in headless Chromium (test/support/browser.ts):
// sign in with an API key (kept in the tab's sessionStorage), and drive endpoints, deliveries, filters and
// receiver settings from the page. Its headers and assets: test/contract/console/console.test.ts.

let service: TestService;
let receiver: Receiver;
let api: Client;
let testKey: string;

before(async () => {
  // One attempt per delivery: a failed one stays failed until someone retries it.
  service = await startTestService({ HERALD_RETRY_SCHEDULE: '0s' });
  receiver = await new Receiver().start();
  const org = await bootstrap(service.url, 'Console org');
  api = org.test;
  testKey = org.raw.test_key.key;
});
after(async () => {
  await service?.stop();
  await receiver?.stop();
});

/** An endpoint whose receiver failed its one delivery (500), with the message that made it. */
async function failedDelivery(name: string) {
  const app = (await api.post('/api/v1/applications', { name })).body;
  const endpoint = (await api.post('/api/v1/endpoints', { app_id: app.id, url: `${receiver.url}/${name}` })).body;
  receiver.respond = () => ({ status: 500, body: 'down' });
  const before = receiver.received.length;
  const message = (
    await api.post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid', payload: { n: 1 } })
  ).body;
  await receiver.waitFor(before + 1);
  const delivery = await eventually(
    async () => {
      const reply = await api.get(`/api/v1/messages/${message.id}/deliveries`);
      return reply.body.data[0]?.status === 'failed' ? reply.body.data[0] : null;
    },
    10_000,
    'the delivery failed',
  );
  return { app, endpoint, message, delivery };
}

test('in a browser: sign in with the bootstrap key, open an endpoint, retry its failed delivery and see the new attempt', async (t) => {
  const { app, endpoint, delivery } = await failedDelivery('console-browser');
  const browser = await launchBrowser(t);
  const context = await browser.newContext();
  const page = await context.newPage();
  const problems: string[] = [];
  const requests: string[] = [];
  const refused: string[] = [];
  // Answers of 4xx are logged by the browser as "Failed to load resource"; they are checked below, by URL.
  page.on('console', (message) => {
    if (
      (message.type() === 'error' || message.type() === 'warning') &&
      !/^Failed to load resource/.test(message.text())
    )
      problems.push(message.text());
  });
  page.on('response', (response) => {
    if (response.status() >= 400)
      refused.push(`${response.status()} ${response.request().method()} ${new URL(response.url()).pathname}`);
  });
  page.on('pageerror', (error) => problems.push(error.message));
  page.on('request', (request) => requests.push(request.url()));
  // Disable and Recover ask first: accepted here.
  page.on('dialog', (dialog) => dialog.accept());

  await page.goto(`${service.url}/console#/endpoints`);
  await page.fill('#sign-in input[name=key]', testKey);
  await page.click('#sign-in button[type=submit]');
  await page.waitForSelector(`#endpoints tbody tr[data-endpoint-id="${endpoint.id}"]`);
  assert.equal(await page.locator('#mode').textContent(), 'Test');
  // The key is in this tab's sessionStorage, and in no URL, cookie or localStorage.
  assert.equal(await page.evaluate(() => sessionStorage.getItem('herald.console.key')), testKey);
  assert.equal(await page.evaluate(() => localStorage.length), 0);
  assert.deepEqual(await context.cookies(), []);
  assert.equal(await page.locator('#sign-in input[name=key]').inputValue(), '', 'the form forgets the key');

  // The endpoints list shows the success ratio over the last 24 hours, from the stats route.
  const row = page.locator(`#endpoints tbody tr[data-endpoint-id="${endpoint.id}"]`);
  await eventually(async () => /0% of 1/.test((await row.locator('.ratio').textContent()) ?? ''), 5_000, 'the ratio');

  // The endpoint's page opens on its health and chart of attempts per hour, and its deliveries as a table
  // whose row says the failed attempt's answer.
  await chooseAction(row, 'Open');
  const item = page.locator(`#endpoint-deliveries tbody tr[data-delivery-id="${delivery.id}"]`);
  await eventually(async () => (await item.locator('.last-answer').textContent()) === 'HTTP 500', 5_000, 'the answer');
  assert.equal(await page.locator('#endpoint-id').textContent(), endpoint.id);
  assert.equal(await page.locator('#endpoint-tabs button.current').textContent(), 'Overview');
  assert.equal(await page.locator('#endpoint-chart').isVisible(), true);
  assert.equal(await page.locator('#endpoint-controls').isVisible(), false, 'the settings wait behind their tabs');
  assert.match((await page.locator('#endpoint-health').textContent()) ?? '', /0% of 1 succeeded, last 24 h/);
  assert.equal(await page.locator('#endpoint-chart svg .bucket').count(), 24);
  assert.equal(await page.locator('#endpoint-chart svg .bar-failure').count(), 1);
  assert.equal(await item.locator('td.status-failed').textContent(), 'failed');
  assert.equal(await item.locator('.attempt-count').textContent(), '1');
  assert.equal(await item.locator('.menu-items').isVisible(), false, 'the actions wait in one menu');

  // The receiver is back: a retry from the row's menu delivers, and the row shows the new answer.
  receiver.respond = () => ({ status: 200, body: 'ok' });
  await chooseAction(item, 'Retry');
  await page.waitForFunction(
    (id) =>
      document.querySelector(`#endpoint-deliveries tr[data-delivery-id="${id}"] .last-answer`)?.textContent ===
      'HTTP 200',
    delivery.id,
    { timeout: 15_000 },
  );
  assert.match((await item.locator('.note').textContent()) ?? '', /queued as attempt 2/);
  assert.equal(await item.locator('.attempt-count').textContent(), '2');
  assert.equal(await item.locator('td.status-success').textContent(), 'success');
  assert.equal((await api.get(`/api/v1/deliveries/${delivery.id}`)).body.status, 'success');
  await page.waitForFunction(() => document.querySelectorAll('#endpoint-chart svg .bar-success').length === 1);

  // Disable from the endpoint's page, and recover (refused while disabled, said on the page).
  await page.click('#endpoint-actions button:text("Disable")');
  await page.waitForSelector('#endpoint-health .status-disabled');
  assert.equal((await api.get(`/api/v1/endpoints/${endpoint.id}`)).body.status, 'disabled');
  await page.click('#endpoint-tabs button[data-tab="policy"]');
  assert.match(page.url(), /#\/endpoints\/ep_[^?]+\?tab=policy$/, 'the tab is in the address');
  await page.click('#recover-endpoint button[type=submit]');
  await page.waitForSelector('#recover-endpoint .note.error');
  assert.match((await page.locator('#recover-endpoint .note').textContent()) ?? '', /disabled/);
  await page.click('#endpoint-actions button:text("Enable")');
  await page.waitForSelector('#endpoint-health .status-active');
  assert.equal(await page.locator('#endpoint-tabs button.current').textContent(), 'Policy', 'a redraw keeps the tab');
  await page.click('#recover-endpoint button[type=submit]');
  await page.waitForFunction(() =>
    /Recovery started \(task_/.test(document.querySelector('#recover-endpoint .note')?.textContent ?? ''),
  );

  const shot = `${service.database.env.HERALD_DATA_DIR}/console-endpoint.png`;
  await page.screenshot({ path: shot, fullPage: true });
  assert.ok(statSync(shot).size > 1000, 'the screenshot is an image');
  assert.deepEqual([...readFileSync(shot).subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], 'a PNG');
  if (process.env.SUITE_CONSOLE_SCREENSHOT)
    await page.screenshot({ path: process.env.SUITE_CONSOLE_SCREENSHOT, fullPage: true });

  // Messages filtered by application and event type, with a message's deliveries and attempts.
  await page.click('#tabs button[data-view="messages"]');
  await page.waitForSelector('#messages tbody tr');
  await page.selectOption('#message-filter select[name=app_id]', app.id);
  await page.selectOption('#message-filter select[name=event_type]', 'invoice.paid');
  await page.click('#message-filter button[type=submit]');
  await page.waitForFunction(() => document.querySelectorAll('#messages tbody tr[data-message-id]').length === 1);
  await chooseAction(page.locator('#messages tbody tr[data-message-id]'), 'Deliveries');
  const messageDelivery = page.locator(`#message-deliveries tbody tr[data-delivery-id="${delivery.id}"]`);
  await eventually(
    async () => (await messageDelivery.locator('.last-answer').textContent()) === 'HTTP 200',
    5_000,
    "the message's delivery and its last answer",
  );
  assert.equal(await messageDelivery.locator('.attempt-count').textContent(), '2');

  // Create an application and an endpoint from the page.
  await page.click('#tabs button[data-view="applications"]');
  await page.fill('#add-application input[name=name]', 'Made in the console <b>bold</b>');
  await page.click('#add-application button[type=submit]');
  await page.waitForFunction(() =>
    /portal \(shown once\)/.test(document.querySelector('#add-application .note')?.textContent ?? ''),
  );
  const made = (await api.get('/api/v1/applications?limit=250')).body.data.find(
    (a: { name: string }) => a.name === 'Made in the console <b>bold</b>',
  );
  assert.ok(made, 'the application exists');
  assert.equal(await page.locator('#applications b').count(), 0, 'a name is shown as text, never as HTML');
  await page.click('#tabs button[data-view="endpoints"]');
  await page.waitForSelector('#endpoints tbody tr');
  await page.selectOption('#add-endpoint select[name=app_id]', made.id);
  await page.fill('#add-endpoint input[name=url]', `${receiver.url}/made`);
  await page.click('#add-endpoint button[type=submit]');
  await page.waitForFunction(() =>
    /signing secret \(shown once\): whsec_/.test(document.querySelector('#add-endpoint .note')?.textContent ?? ''),
  );
  assert.equal((await api.get(`/api/v1/endpoints?app_id=${made.id}`)).body.data.length, 1);

  // The catalog, and the operational endpoints.
  const pager = await api.post('/api/v1/operational-endpoints', {
    url: 'http://127.0.0.1:9/pager',
    description: 'Pager',
    event_types: ['message.attempt.exhausted', 'endpoint.disabled'],
  });
  assert.equal(pager.status, 201);
  await page.click('#tabs button[data-view="catalog"]');
  await page.waitForSelector('#catalog tbody tr');
  assert.match((await page.locator('#catalog').textContent()) ?? '', /invoice\.paid/);
  await page.click('#tabs button[data-view="operational"]');
  await page.waitForSelector('#operational p, #operational table');
  const shown = (await page.locator('#operational').textContent()) ?? '';
  for (const part of [
    pager.body.id,
    'http://127.0.0.1:9/pager',
    'Pager',
    'message.attempt.exhausted, endpoint.disabled',
  ])
    assert.ok(shown.includes(part), `${part} in ${shown}`);

  // Signing out forgets the key.
  await page.click('#sign-out');
  assert.equal(await page.evaluate(() => sessionStorage.getItem('herald.console.key')), null);
  assert.equal(await page.locator('#sign-in-section').isVisible(), true);

  assert.deepEqual(problems, [], 'console errors (a CSP violation is one)');
  // The refusals the test asked for, and nothing else.
  assert.deepEqual(
    refused.filter((line) => !line.endsWith(' /favicon.ico')),
    [`409 POST /api/v1/endpoints/${endpoint.id}/recover`],
  );
  const outside = requests.filter((url) => !url.startsWith(`${service.url}/`));
  assert.deepEqual(outside, [], 'requests to anywhere but the service');
  assert.ok(
    requests.every((url) => !url.includes(testKey)),
    'the key is in no URL',
  );
});

test('in a browser: a wrong key is refused on the page and nothing is kept', async (t) => {
  const browser = await launchBrowser(t);
  const page = await browser.newPage();
  await page.goto(`${service.url}/console`);
  await page.fill('#sign-in input[name=key]', 'sk_test_notavalidkey');
  await page.click('#sign-in button[type=submit]');
  await page.waitForSelector('#notice.error');
  assert.match((await page.locator('#notice').textContent()) ?? '', /refused/);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('herald.console.key')), null);
  assert.equal(await page.locator('#signed-in').isVisible(), false);
});

test("in a browser: an endpoint's content filter is tried and saved on its page, and a delivery shows its trace id", async (t) => {
  const app = (await api.post('/api/v1/applications', { name: 'console-filter' })).body;
  const endpoint = (await api.post('/api/v1/endpoints', { app_id: app.id, url: `${receiver.url}/filtered` })).body;
  receiver.respond = () => ({ status: 200, body: 'ok' });
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const emitted = await api.post(
    '/api/v1/messages',
    { app_id: app.id, event_type: 'invoice.paid', payload: { amount: 5 } },
    { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
  );
  assert.equal(emitted.status, 201);
  const [deliveryId] = emitted.body.delivery_ids as string[];

  const browser = await launchBrowser(t);
  const context = await browser.newContext();
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: service.url });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(error.message));
  await page.goto(`${service.url}/console#/endpoints`);
  await page.fill('#sign-in input[name=key]', testKey);
  await page.click('#sign-in button[type=submit]');
  // The delivery's trace: the emit's trace id, copied with one click.
  await page.goto(`${service.url}/console#/deliveries/${deliveryId}`);
  const trace = page.locator(`#delivery-detail .delivery[data-delivery-id="${deliveryId}"] .trace`);
  await trace.waitFor();
  assert.equal(await trace.locator('code').textContent(), traceId);
  await trace.locator('button:text("Copy")').click();
  await trace.locator('button:text("Copied")').waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), traceId);

  // The endpoint's settings tab, opened by its address.
  await page.goto(`${service.url}/console#/endpoints/${endpoint.id}?tab=settings`);
  await page.waitForSelector('#endpoint-filter form.filter-form');
  assert.equal(await page.locator('#endpoint-tabs button.current').textContent(), 'Settings');
  assert.match((await page.locator('#endpoint-details .filter-value').textContent()) ?? '', /^none/);

  // A draft is tried against sample payloads before it is saved; what the route says shows in the form.
  const form = page.locator('#endpoint-filter form.filter-form');
  const result = form.locator('.filter-result');
  await form.locator('textarea[name=filter]').fill('{"data.amount": {"$gte": 100}');
  await form.locator('button:text("Test filter")').click();
  await eventually(async () => /not valid JSON/.test((await result.textContent()) ?? ''), 5_000, 'a JSON error');
  await form.locator('textarea[name=filter]').fill('{"data.amount": {"$gte": 100}}');
  await form.locator('textarea[name=payload]').fill('{"amount": 5}');
  await form.locator('button:text("Test filter")').click();
  await eventually(async () => /^Does not match/.test((await result.textContent()) ?? ''), 5_000, 'no match');
  await form.locator('textarea[name=payload]').fill('{"amount": 500}');
  await form.locator('button:text("Test filter")').click();
  await eventually(async () => /^Matches/.test((await result.textContent()) ?? ''), 5_000, 'a match');
  assert.equal((await api.get(`/api/v1/endpoints/${endpoint.id}`)).body.filter, null, 'testing saves nothing');

  // A filter the API refuses says why in the form, and nothing is saved.
  await form.locator('textarea[name=filter]').fill('{"$where": "this.data.amount > 1"}');
  await form.locator('button:text("Save filter")').click();
  await eventually(async () => /\$where is not supported/.test((await result.textContent()) ?? ''), 5_000, 'refused');
  assert.match((await result.getAttribute('class')) ?? '', /error/);
  assert.equal((await api.get(`/api/v1/endpoints/${endpoint.id}`)).body.filter, null);

  await form.locator('textarea[name=filter]').fill('{"data.amount": {"$gte": 100}}');
  await form.locator('button:text("Save filter")').click();
  await eventually(async () => /^Filter saved/.test((await result.textContent()) ?? ''), 5_000, 'saved');
  assert.deepEqual((await api.get(`/api/v1/endpoints/${endpoint.id}`)).body.filter, { 'data.amount': { $gte: 100 } });
  assert.equal(await page.locator('#endpoint-details .filter-value').textContent(), '{"data.amount":{"$gte":100}}');
  const shot = `${service.database.env.HERALD_DATA_DIR}/console-filter.png`;
  await page.screenshot({ path: shot, fullPage: true });
  assert.ok(statSync(shot).size > 1000, 'the screenshot is an image');
  assert.deepEqual(problems, []);
});

test('in a browser: the console edits an endpoint’s mutual TLS and OAuth2 settings, and saves them sealed', async (t) => {
  const app = (await api.post('/api/v1/applications', { name: 'console-security' })).body;
  const endpoint = (await api.post('/api/v1/endpoints', { app_id: app.id, url: `${receiver.url}/security` })).body;
  const ca = makeCa('Console receiver CA');
  const identity = ca.issue('console-client', 'client', 10);
  const browser = await launchBrowser(t);
  const page = await (await browser.newContext()).newPage();
  await page.goto(`${service.url}/console#/endpoints`);
  await page.fill('#sign-in input[name=key]', testKey);
  await page.click('#sign-in button[type=submit]');
  const row = page.locator(`#endpoints tbody tr[data-endpoint-id="${endpoint.id}"]`);
  await chooseAction(row, 'Open');
  await page.waitForFunction((id) => document.querySelector('#endpoint-id')?.textContent === id, endpoint.id);
  await page.click('#endpoint-tabs button[data-tab="security"]');
  const form = page.locator('#endpoint-receiver-settings .receiver-settings-form');
  for (const name of [
    'client_cert',
    'client_key',
    'ca',
    'token_url',
    'client_id',
    'client_secret',
    'scope',
    'audience',
  ])
    assert.equal(await form.locator(`[name=${name}]`).count(), 1, `the form has ${name}`);
  await form.locator('[name=client_cert]').fill(identity.cert);
  await form.locator('[name=client_key]').fill(identity.key);
  await form.locator('[name=token_url]').fill(`${receiver.url}/token`);
  await form.locator('[name=client_id]').fill('console-client');
  await form.locator('[name=client_secret]').fill('console-cl1ent-s3cret');
  await form.locator('[name=audience]').fill('https://receiver.example');
  await form.locator('button[type=submit]').click();
  await page.waitForFunction(() =>
    /Receiver settings saved/.test(document.querySelector('#endpoint-receiver-settings .note')?.textContent ?? ''),
  );
  await page.waitForFunction(() =>
    /console-client at /.test(document.querySelector('#endpoint-details')?.textContent ?? ''),
  );
  assert.match((await page.locator('#endpoint-details').textContent()) ?? '', /Client certificateuntil /);

  const saved = (await api.get(`/api/v1/endpoints/${endpoint.id}`)).body;
  assert.deepEqual(saved.tls, {
    client_cert: identity.cert.trim(),
    client_key: '<redacted>',
    ca: null,
    client_cert_not_after: saved.tls.client_cert_not_after,
  });
  assert.equal(saved.auth.client_secret, '<redacted>');
  assert.equal(saved.auth.audience, 'https://receiver.example');
  assert.equal(saved.auth.client_auth, 'basic');
  const stored = await service.store.ctx.db
    .selectFrom('endpoints')
    .selectAll()
    .where('id', '=', endpoint.id)
    .executeTakeFirstOrThrow();
  assert.equal(service.store.endpoints.tlsKey(stored), identity.key.trim());
  assert.equal(service.store.endpoints.authSecret(stored), 'console-cl1ent-s3cret');
  assert.ok(!(await page.content()).includes('console-cl1ent-s3cret'));

  // Emptied, the settings are removed (the redrawn page keeps the security tab and its form in view).
  assert.equal(await page.locator('#endpoint-tabs button.current').textContent(), 'Security');
  assert.match((await page.locator('#endpoint-security').textContent()) ?? '', /OAuth2console-client at /);
  for (const name of ['client_cert', 'client_key', 'token_url']) await form.locator(`[name=${name}]`).fill('');
  await form.locator('button[type=submit]').click();
  await eventually(async () => {
    const read = (await api.get(`/api/v1/endpoints/${endpoint.id}`)).body;
    return read.tls === null && read.auth === null;
  });
});
