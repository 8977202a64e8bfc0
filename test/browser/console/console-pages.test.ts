import { after, before, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import type { BrowserContext, Page } from 'playwright-core';
import { startTestService, type TestService } from '../../support/service.js';
import { chooseAction, launchBrowser } from '../../support/browser.js';
import { bootstrap, type Client } from '../../support/client.js';
import { eventually, Receiver } from '../../support/receiver.js';

// The console's addresses, search, lists, a delivery's payload and answers, and its editors, used as a
// person would in headless Chromium (test/support/browser.ts): each view has its own URL, Back and Forward
// work, a link opened before signing in opens after it, and what an action answers is said beside it.

let service: TestService;
let receiver: Receiver;
let api: Client;
let testKey: string;
let app: { id: string; uid: string; name: string };
let endpoint: { id: string; url: string };
let failed: { messageId: string; deliveryId: string };
let succeeded: { messageId: string; deliveryId: string };

before(async () => {
  service = await startTestService({ HERALD_RETRY_SCHEDULE: '0s' });
  receiver = await new Receiver().start();
  receiver.respond = (request) =>
    request.body.includes('"fail":true')
      ? { status: 503, headers: { 'X-Maintenance': 'until 06:00' }, body: '{"error":"receiver down for maintenance"}' }
      : { status: 200, body: 'thanks' };
  const org = await bootstrap(service.url, 'Console pages org');
  api = org.test;
  testKey = org.raw.test_key.key;
  app = (await api.post('/api/v1/applications', { name: 'Pages app', uid: 'pages-app' })).body;
  endpoint = (await api.post('/api/v1/endpoints', { app_id: app.id, url: `${receiver.url}/pages` })).body;
  const send = async (payload: object) => {
    const before = receiver.received.length;
    const emitted = await api.post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid', payload });
    await receiver.waitFor(before + 1);
    const deliveryId = emitted.body.delivery_ids[0] as string;
    await eventually(
      async () => ((await api.get(`/api/v1/deliveries/${deliveryId}`)).body.attempts.length > 0 ? true : null),
      10_000,
      'the attempt recorded',
    );
    return { messageId: emitted.body.id as string, deliveryId };
  };
  succeeded = await send({ invoice: 'inv_ok', amount: 10 });
  failed = await send({ invoice: 'inv_down', fail: true });
});
after(async () => {
  await service?.stop();
  await receiver?.stop();
});

interface Watched {
  context: BrowserContext;
  page: Page;
  problems: string[];
  requests: string[];
}

/** A page of a fresh browser, watched for errors and for requests anywhere but the service. */
async function watchedPage(t: TestContext): Promise<Watched> {
  const browser = await launchBrowser(t);
  const context = await browser.newContext();
  const page = await context.newPage();
  const problems: string[] = [];
  const requests: string[] = [];
  page.on('pageerror', (error) => problems.push(error.message));
  page.on('request', (request) => requests.push(request.url()));
  return { context, page, problems, requests };
}

async function signIn(page: Page) {
  await page.fill('#sign-in input[name=key]', testKey);
  await page.click('#sign-in button[type=submit]');
  await page.waitForSelector('#signed-in:not([hidden])');
}

/** The checks every test ends with: a screenshot, no page errors, nothing outside, the key in the tab only. */
async function finish(watched: Watched, name: string) {
  const { page, context, problems, requests } = watched;
  const shot = `${service.database.env.HERALD_DATA_DIR}/${name}.png`;
  await page.screenshot({ path: shot, fullPage: true });
  assert.ok(statSync(shot).size > 1000, 'the screenshot is an image');
  assert.deepEqual(problems, [], 'page errors');
  assert.deepEqual(
    requests.filter((url) => !url.startsWith(`${service.url}/`)),
    [],
    'requests to anywhere but the service',
  );
  assert.ok(
    requests.every((url) => !url.includes(testKey)),
    'the key is in no URL',
  );
  assert.equal(await page.evaluate(() => sessionStorage.getItem('herald.console.key')), testKey);
  assert.equal(await page.evaluate(() => localStorage.length), 0);
  assert.deepEqual(await context.cookies(), []);
}

const shown = (page: Page, section: string) => page.waitForSelector(`#view-${section}:not([hidden])`);

test('in a browser: a deep link opens its view right after sign-in; Back and Forward walk the views', async (t) => {
  const watched = await watchedPage(t);
  const { page } = watched;
  await page.goto(`${service.url}/console#/deliveries/${failed.deliveryId}`);
  await signIn(page);
  await shown(page, 'delivery');
  assert.equal(await page.locator('#delivery-id').textContent(), failed.deliveryId);
  const item = page.locator(`#delivery-detail .delivery[data-delivery-id="${failed.deliveryId}"]`);
  await item.locator('.attempts tbody tr[data-attempt]').first().waitFor();
  // The row reads: event type, endpoint URL, status, attempts and age first.
  await eventually(
    async () =>
      /^invoice\.paid → \S+\/pages · failed · 1 attempt\(s\) · \d+ (s|min) ago/.test(
        (await item.locator('.delivery-head').textContent()) ?? '',
      ),
    5_000,
    'the delivery reads as a sentence',
  );

  // Links and tabs are addresses: each one a history entry.
  await item.locator(`.delivery-ids a[href="#/endpoints/${endpoint.id}"]`).click();
  await shown(page, 'endpoint');
  await page.waitForFunction((id) => document.querySelector('#endpoint-id')?.textContent === id, endpoint.id);
  assert.equal(new URL(page.url()).hash, `#/endpoints/${endpoint.id}`);
  await page.click('#tabs button[data-view="catalog"]');
  await shown(page, 'catalog');
  assert.equal(new URL(page.url()).hash, '#/catalog');

  await page.goBack();
  await shown(page, 'endpoint');
  assert.equal(new URL(page.url()).hash, `#/endpoints/${endpoint.id}`);
  await page.goBack();
  await shown(page, 'delivery');
  assert.equal(await page.locator('#delivery-id').textContent(), failed.deliveryId);
  await page.goForward();
  await shown(page, 'endpoint');
  await page.goForward();
  await shown(page, 'catalog');

  // A filtered list is an address too, and opens filtered.
  await page.goto(`${service.url}/console#/messages?app_id=${app.id}&event_type=invoice.paid`);
  await shown(page, 'messages');
  await page.waitForFunction(() => document.querySelectorAll('#messages tbody tr[data-message-id]').length === 2);
  assert.equal(await page.locator('#message-filter select[name=app_id]').inputValue(), app.id);
  assert.equal(await page.locator('#message-filter select[name=event_type]').inputValue(), 'invoice.paid');
  await finish(watched, 'console-deep-link');
});

test('in a browser: the search box opens any evt_, dlv_, ep_, app_ id or application uid, and says when nothing has it', async (t) => {
  const watched = await watchedPage(t);
  const { page } = watched;
  await page.goto(`${service.url}/console`);
  await signIn(page);
  const search = async (text: string) => {
    await page.fill('#search input[name=q]', text);
    await page.click('#search button[type=submit]');
  };
  await search(succeeded.messageId);
  await shown(page, 'message');
  await page.waitForFunction((id) => document.querySelector('#message-id')?.textContent === id, succeeded.messageId);
  assert.equal(new URL(page.url()).hash, `#/messages/${succeeded.messageId}`);
  await page.locator(`#message-deliveries tr[data-delivery-id="${succeeded.deliveryId}"]`).waitFor();

  await search(failed.deliveryId);
  await shown(page, 'delivery');
  assert.equal(new URL(page.url()).hash, `#/deliveries/${failed.deliveryId}`);

  await search(endpoint.id);
  await shown(page, 'endpoint');
  assert.equal(new URL(page.url()).hash, `#/endpoints/${endpoint.id}`);

  await search(app.id);
  await shown(page, 'application');
  await page.waitForFunction(() => document.querySelector('#application-name')?.textContent === 'Pages app');
  assert.equal(new URL(page.url()).hash, `#/applications/${app.id}`);
  await page.click('#tabs button[data-view="endpoints"]');
  await shown(page, 'endpoints');

  await search('pages-app');
  await shown(page, 'application');
  assert.equal(new URL(page.url()).hash, `#/applications/${app.id}`, 'a uid opens its application');
  await page.waitForSelector(`#application-endpoints a[href="#/endpoints/${endpoint.id}"]`);
  // Its attempts per hour by event type: the failed delivery's attempt is in the chart's legend.
  await page.waitForSelector('#application-chart svg .bucket', { state: 'attached' });
  assert.match((await page.locator('#application-chart .chart-legend').textContent()) ?? '', /invoice\.paid/);

  await search('dlv_doesnotexist');
  await page.waitForSelector('#search-note:not([hidden])');
  assert.match(
    (await page.locator('#search-note').textContent()) ?? '',
    /Nothing here has the id or uid "dlv_doesnotexist"/,
  );
  assert.equal(new URL(page.url()).hash, `#/applications/${app.id}`, 'the view stays');
  const note = await page.locator('#search-note').boundingBox();
  const box = await page.locator('#search input[name=q]').boundingBox();
  assert.ok(note && box && Math.abs(note.y - box.y) < 40, 'the message sits beside the search box');
  await finish(watched, 'console-search');
});

test("in a browser: deliveries filter by status; a delivery shows its payload and each attempt's answer", async (t) => {
  const watched = await watchedPage(t);
  const { page, context } = watched;
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: service.url });
  await page.goto(`${service.url}/console#/deliveries`);
  await signIn(page);
  await shown(page, 'deliveries');
  await page.waitForSelector(`#deliveries tbody tr[data-delivery-id="${failed.deliveryId}"]`);
  assert.equal(await page.locator(`#deliveries tbody tr[data-delivery-id="${succeeded.deliveryId}"]`).count(), 1);

  // Rows read: status, event type, endpoint URL, attempts, the last answer and age; the rest in one menu.
  const row = page.locator(`#deliveries tbody tr[data-delivery-id="${failed.deliveryId}"]`);
  await eventually(
    async () =>
      ((await row.locator('td').nth(2).textContent()) ?? '').endsWith('/pages') &&
      (await row.locator('td.last-answer').textContent()) === 'HTTP 503',
    5_000,
    'the URL and the last answer',
  );
  const cells = await row.locator('td').allTextContents();
  assert.equal(cells[0], 'failed');
  assert.equal(cells[1], 'invoice.paid');
  assert.equal(cells[3], '1');
  assert.equal(cells[4], 'HTTP 503');
  assert.match(cells[5] ?? '', /ago$/);
  assert.match((await row.locator('td .age').getAttribute('title')) ?? '', /\d{4}|\d:\d\d/, 'the exact time on hover');
  assert.equal(
    await row.locator('td.actions button, td.actions a').filter({ visible: true }).count(),
    0,
    'no row of buttons',
  );
  await chooseAction(row, 'Copy id');
  await row.locator('button:text("Copied")').waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), failed.deliveryId);

  await page.selectOption('#delivery-filter select[name=status]', 'failed');
  await page.click('#delivery-filter button[type=submit]');
  await page.waitForFunction(() => new URL(location.href).hash === '#/deliveries?status=failed');
  await page.waitForFunction((id) => {
    const rows = document.querySelectorAll('#deliveries tbody tr[data-delivery-id]');
    return rows.length === 1 && rows[0]?.getAttribute('data-delivery-id') === id;
  }, failed.deliveryId);
  await page.selectOption('#delivery-filter select[name=status]', 'success');
  await page.click('#delivery-filter button[type=submit]');
  await page.waitForFunction((id) => {
    const rows = document.querySelectorAll('#deliveries tbody tr[data-delivery-id]');
    return rows.length === 1 && rows[0]?.getAttribute('data-delivery-id') === id;
  }, succeeded.deliveryId);
  await page.goBack();
  await page.waitForFunction(
    (id) => document.querySelector('#deliveries tbody tr[data-delivery-id]')?.getAttribute('data-delivery-id') === id,
    failed.deliveryId,
  );
  assert.equal(await page.locator('#delivery-filter select[name=status]').inputValue(), 'failed');

  // The delivery's page: the payload sent and the receiver's answer, on demand.
  await chooseAction(row, 'Open');
  await shown(page, 'delivery');
  const item = page.locator(`#delivery-detail .delivery[data-delivery-id="${failed.deliveryId}"]`);
  await item.locator('.attempts tbody tr[data-attempt]').first().waitFor();
  assert.equal(await item.locator('.answers').isVisible(), false, 'answers wait to be asked for');
  await item.locator('button:text("Show payload and answers")').click();
  await item.locator('.answers .response-body').waitFor();
  assert.deepEqual(JSON.parse((await item.locator('.answers pre.payload').textContent()) ?? ''), {
    invoice: 'inv_down',
    fail: true,
  });
  assert.match(
    (await item.locator('.answers pre.payload').textContent()) ?? '',
    /\n {2}"invoice": "inv_down"/,
    'pretty-printed',
  );
  assert.match((await item.locator('.answer-head').first().textContent()) ?? '', /^#1 · HTTP 503 · \d+ ms/);
  assert.equal(
    await item.locator('.answers .response-body').first().textContent(),
    '{"error":"receiver down for maintenance"}',
  );
  // The headers sent and received, folded until opened.
  const sentHeaders = item.locator('.answers .request-headers').first();
  assert.equal(await sentHeaders.locator('pre').isVisible(), false);
  await sentHeaders.locator('summary').click();
  assert.match(
    (await sentHeaders.locator('pre').textContent()) ?? '',
    new RegExp(`^webhook-id: ${failed.messageId}$`, 'm'),
  );
  assert.match((await sentHeaders.locator('pre').textContent()) ?? '', /^webhook-signature: v1,\S+$/m);
  await item.locator('.answers .response-headers summary').first().click();
  assert.match(
    (await item.locator('.answers .response-headers pre').first().textContent()) ?? '',
    /^x-maintenance: until 06:00$/m,
  );

  // Retried, the newest attempt comes first.
  receiver.respond = () => ({ status: 200, body: 'back up' });
  await item.locator('button:text("Retry")').click();
  await page.waitForFunction(
    (id) =>
      /#2 manual · success · HTTP 200/.test(
        document.querySelector(`[data-delivery-id="${id}"] .attempts tbody tr`)?.getAttribute('title') ?? '',
      ),
    failed.deliveryId,
    { timeout: 15_000 },
  );
  assert.match((await item.locator('.note').textContent()) ?? '', /queued as attempt 2/);
  await item.locator('button:text("Hide payload and answers")').click();
  await item.locator('button:text("Show payload and answers")').click();
  await page.waitForFunction(
    (id) => document.querySelector(`[data-delivery-id="${id}"] .answers .response-body`)?.textContent === 'back up',
    failed.deliveryId,
  );

  // A payload no longer stored says so.
  await service.store.ctx.db.deleteFrom('payloads').where('message_id', '=', failed.messageId).execute();
  await item.locator('button:text("Hide payload and answers")').click();
  await item.locator('button:text("Show payload and answers")').click();
  await item.locator('.answers .payload-gone').waitFor();
  assert.match((await item.locator('.answers .payload-gone').textContent()) ?? '', /no longer stored/);
  await finish(watched, 'console-deliveries');
});

test("in a browser: an event type's schema is edited in the catalog, and what the API refuses shows in the form", async (t) => {
  const watched = await watchedPage(t);
  const { page } = watched;
  await page.goto(`${service.url}/console#/catalog`);
  await signIn(page);
  const row = page.locator('#catalog tbody tr[data-event-type="invoice.created"]');
  await row.locator('button:text("Edit")').click();
  const form = page.locator('#event-type-form');
  await form.waitFor();
  assert.equal(await form.locator('input[name=name]').inputValue(), 'invoice.created');

  // A schema that is not JSON, then one the API refuses: each said in the form, nothing saved.
  await form.locator('textarea[name=schema]').fill('{"type": "object",');
  await form.locator('button[type=submit]').click();
  await form.locator('.note.error').waitFor();
  assert.match((await form.locator('.note').textContent()) ?? '', /The schema is not valid JSON/);
  await form.locator('textarea[name=schema]').fill('{"type": "object", "required": ["invoice_id"]}');
  await form.locator('textarea[name=example_json]').fill('{"amount": 1}');
  await form.locator('button[type=submit]').click();
  await page.waitForFunction(() =>
    /example_json/.test(document.querySelector('#event-type-form .note.error')?.textContent ?? ''),
  );
  const error = await form.locator('.note.error').boundingBox();
  const submit = await form.locator('button[type=submit]').boundingBox();
  assert.ok(error && submit && Math.abs(error.y - submit.y) < 200, 'the error sits by the form');
  assert.equal((await api.get('/api/v1/event-types/invoice.created')).body.schema, null, 'nothing saved');

  await form.locator('textarea[name=example_json]').fill('{"invoice_id": "inv_1", "amount": 1}');
  await form.locator('input[name=description]').fill('An invoice was drafted.');
  await form.locator('button[type=submit]').click();
  await page.waitForFunction(() =>
    /saved \(version/.test(document.querySelector('#event-type-form .note:not(.error)')?.textContent ?? ''),
  );
  const saved = (await api.get('/api/v1/event-types/invoice.created')).body;
  assert.deepEqual(saved.schema, { type: 'object', required: ['invoice_id'] });
  assert.deepEqual(saved.example_json, { invoice_id: 'inv_1', amount: 1 });
  assert.equal(saved.description, 'An invoice was drafted.');
  assert.equal(await row.locator('td').nth(2).textContent(), 'yes');

  // A new event type.
  await page.click('#new-event-type');
  await form.locator('input[name=name]').fill('refund.issued');
  await form.locator('textarea[name=example_json]').fill('{"refund_id": "re_1"}');
  await form.locator('button[type=submit]').click();
  await page.locator('#catalog tbody tr[data-event-type="refund.issued"]').waitFor();
  assert.deepEqual((await api.get('/api/v1/event-types/refund.issued')).body.example_json, { refund_id: 're_1' });
  await finish(watched, 'console-catalog');
});

test('in a browser: operational endpoints are created, disabled, rotated and deleted; each asks first, and a dismissed dialog changes nothing', async (t) => {
  const watched = await watchedPage(t);
  const { page } = watched;
  let answer = true;
  const asked: string[] = [];
  page.on('dialog', (dialog) => {
    asked.push(dialog.message());
    void (answer ? dialog.accept() : dialog.dismiss());
  });
  await page.goto(`${service.url}/console#/operational`);
  await signIn(page);
  await shown(page, 'operational');
  await page.click('#new-operational');
  const form = page.locator('#operational-form');
  await form.locator('input[name=url]').fill('http://127.0.0.1:9/ops-pager');
  await form.locator('input[name=description]').fill('Pager');
  await form.locator('input[value="endpoint.disabled"]').check();
  await form.locator('button[type=submit]').click();
  await page.waitForFunction(() =>
    /signing secret \(shown once\): whsec_/.test(document.querySelector('#operational-form .note')?.textContent ?? ''),
  );
  const [made] = (await api.get('/api/v1/operational-endpoints')).body.data;
  assert.equal(made.url, 'http://127.0.0.1:9/ops-pager');
  assert.deepEqual(made.event_types, ['endpoint.disabled']);
  const row = page.locator(`#operational tr[data-operational-id="${made.id}"]`);
  await row.waitFor();

  // Dismissed: nothing changes.
  answer = false;
  for (const action of ['Disable', 'Rotate secret', 'Delete']) await row.locator(`button:text("${action}")`).click();
  assert.equal(asked.length, 3, 'each destructive action asked');
  const still = (await api.get('/api/v1/operational-endpoints')).body.data;
  assert.equal(still.length, 1);
  assert.equal(still[0].status, 'active');
  assert.equal(await row.locator('.note').count(), 0);

  // Accepted: done, and said beside the row.
  answer = true;
  await row.locator('button:text("Rotate secret")').click();
  await page.waitForFunction(
    (id) =>
      /New signing secret \(shown once\): whsec_/.test(
        document.querySelector(`#operational tr[data-operational-id="${id}"] .note`)?.textContent ?? '',
      ),
    made.id,
  );
  await row.locator('button:text("Disable")').click();
  await page.waitForFunction(
    (id) => document.querySelector(`#operational tr[data-operational-id="${id}"] .status-disabled`) !== null,
    made.id,
  );
  assert.equal((await api.get('/api/v1/operational-endpoints')).body.data[0].status, 'disabled');

  // Edited in the form.
  await row.locator('button:text("Edit")').click();
  await form.locator('input[name=description]').fill('Pager, night shift');
  await form.locator('button[type=submit]').click();
  await page.waitForFunction(() =>
    /saved\./.test(document.querySelector('#operational-form .note')?.textContent ?? ''),
  );
  assert.equal((await api.get('/api/v1/operational-endpoints')).body.data[0].description, 'Pager, night shift');

  await row.locator('button:text("Delete")').click();
  await page.waitForFunction(() => /deleted\./.test(document.querySelector('#operational > .note')?.textContent ?? ''));
  assert.deepEqual((await api.get('/api/v1/operational-endpoints')).body.data, []);
  assert.equal(asked.length, 6);
  await finish(watched, 'console-operational');
});

test('in a browser: endpoint controls (rate limit, ordering, headers) are saved on the endpoint page; Disable, Rotate secret and Delete ask first', async (t) => {
  const watched = await watchedPage(t);
  const { page } = watched;
  const own = (await api.post('/api/v1/endpoints', { app_id: app.id, url: `${receiver.url}/controls` })).body;
  let answer = false;
  page.on('dialog', (dialog) => void (answer ? dialog.accept() : dialog.dismiss()));
  await page.goto(`${service.url}/console#/endpoints/${own.id}`);
  await signIn(page);
  await page.waitForFunction((id) => document.querySelector('#endpoint-id')?.textContent === id, own.id);
  await page.click('#endpoint-actions button:text("Disable")');
  assert.equal((await api.get(`/api/v1/endpoints/${own.id}`)).body.status, 'active', 'dismissed: still active');

  await page.click('#endpoint-tabs button[data-tab="policy"]');
  const form = page.locator('#endpoint-controls');
  await form.locator('input[name=rate_limit]').fill('12');
  await form.locator('input[name=retry_schedule]').fill('0s, 10s , 2h');
  await form.locator('input[name=circuit]').fill('{"min_attempts": 40, "cooldown": "1m"}');
  await form.locator('select[name=ordering]').selectOption('fifo');
  await form.locator('textarea[name=headers]').fill('X-Tenant: acme\nAuthorization: Bearer console-s3cret');
  await form.locator('button[type=submit]').click();
  await page.waitForFunction(() =>
    /Delivery controls saved/.test(document.querySelector('#endpoint-controls .note')?.textContent ?? ''),
  );
  const saved = (await api.get(`/api/v1/endpoints/${own.id}`)).body;
  assert.equal(saved.rate_limit, 12);
  assert.deepEqual(saved.retry_schedule, ['0s', '10s', '2h']);
  assert.deepEqual(saved.circuit, { min_attempts: 40, cooldown: '1m' });
  assert.match(
    (await page.locator('#endpoint-details').textContent()) ?? '',
    /Circuitclosed · \{"min_attempts":40,"cooldown":"1m"\}/,
  );
  assert.equal(await form.locator('input[name=retry_schedule]').inputValue(), '0s, 10s, 2h');
  assert.match((await page.locator('#endpoint-details').textContent()) ?? '', /Retry schedule0s, 10s, 2h/);
  assert.equal(saved.ordering, 'fifo');
  assert.deepEqual(saved.headers, { 'X-Tenant': 'acme', Authorization: '<redacted>' });
  assert.deepEqual((await form.locator('textarea[name=headers]').inputValue()).split('\n').sort(), [
    'Authorization: <redacted>',
    'X-Tenant: acme',
  ]);
  assert.ok(!(await page.content()).includes('console-s3cret'));

  // Rotate secret and Delete ask too: dismissed, nothing; accepted, done and said beside the buttons.
  await page.click('#endpoint-actions button:text("Rotate secret")');
  await page.click('#endpoint-actions button:text("Delete")');
  assert.equal((await api.get(`/api/v1/endpoints/${own.id}`)).status, 200);
  assert.equal(await page.locator('#endpoint-actions .note').count(), 0);
  answer = true;
  await page.click('#endpoint-actions button:text("Rotate secret")');
  await page.waitForFunction(() =>
    /New signing secret \(shown once\): whsec_/.test(
      document.querySelector('#endpoint-actions .note')?.textContent ?? '',
    ),
  );
  await page.click('#endpoint-actions button:text("Delete")');
  await page.waitForFunction(() =>
    /deleted\./.test(document.querySelector('#endpoint-actions .note')?.textContent ?? ''),
  );
  assert.equal((await api.get(`/api/v1/endpoints/${own.id}`)).status, 404);
  await finish(watched, 'console-controls');
});

test('in a browser: deliveries and messages page with More until the last, and an empty list says so', async (t) => {
  // An application of its own, made last: the tests above see none of its messages.
  const paged = (await api.post('/api/v1/applications', { name: 'Paged app' })).body;
  await api.post('/api/v1/endpoints', { app_id: paged.id, url: `${receiver.url}/paged` });
  for (let i = 0; i < 51; i++)
    await api.post('/api/v1/messages', { app_id: paged.id, event_type: 'invoice.paid', payload: { i } });
  const empty = (await api.post('/api/v1/applications', { name: 'Empty app' })).body;
  const watched = await watchedPage(t);
  const { page } = watched;
  const rows = (table: string) =>
    page.locator(`#${table} tbody tr[data-${table === 'deliveries' ? 'delivery' : 'message'}-id]`);

  await page.goto(`${service.url}/console#/deliveries?app_id=${paged.id}`);
  await signIn(page);
  await shown(page, 'deliveries');
  // 25 a page: two More clicks bring all 51, and the button goes once nothing is left.
  await page.waitForFunction(() => document.querySelectorAll('#deliveries tbody tr[data-delivery-id]').length === 25);
  await page.click('#deliveries-more');
  await page.waitForFunction(() => document.querySelectorAll('#deliveries tbody tr[data-delivery-id]').length === 50);
  await page.click('#deliveries-more');
  await page.waitForFunction(() => document.querySelectorAll('#deliveries tbody tr[data-delivery-id]').length === 51);
  assert.equal(await page.locator('#deliveries-more').isHidden(), true);
  assert.equal(
    new Set(await rows('deliveries').evaluateAll((r) => r.map((e) => e.getAttribute('data-delivery-id')))).size,
    51,
  );

  await page.goto(`${service.url}/console#/messages?app_id=${paged.id}`);
  await shown(page, 'messages');
  await page.waitForFunction(() => document.querySelectorAll('#messages tbody tr[data-message-id]').length === 50);
  await page.click('#messages-more');
  await page.waitForFunction(() => document.querySelectorAll('#messages tbody tr[data-message-id]').length === 51);
  assert.equal(await page.locator('#messages-more').isHidden(), true);

  await page.goto(`${service.url}/console#/messages?app_id=${empty.id}`);
  await page.waitForFunction(() => document.querySelector('#messages tbody td')?.textContent === 'No messages.');
  assert.equal(await rows('messages').count(), 0);
  await finish(watched, 'console-paging');
});

test('in a browser: an admin makes a scoped key (role, application, expiry), sees it once, and revokes it; a reader key is refused changes', async (t) => {
  const watched = await watchedPage(t);
  const { page } = watched;
  page.on('dialog', (dialog) => void dialog.accept());
  await page.goto(`${service.url}/console#/keys`);
  await signIn(page);
  await shown(page, 'keys');
  const form = page.locator('#key-form');
  await form.locator('input[name=name]').fill('billing emitter');
  await form.locator('select[name=role]').selectOption('emitter');
  await form.locator(`#key-apps input[value="${app.id}"]`).check();
  await form.locator('input[name=expires_at]').fill('2099-01-01T12:00');
  await form.locator('button[type=submit]').click();
  await page.waitForFunction(() =>
    /\(emitter\) made\. Copy it now, it is shown once: sk_test_/.test(
      document.querySelector('#key-form .note')?.textContent ?? '',
    ),
  );
  const shownKey = /sk_test_\w+/.exec((await form.locator('.note').textContent()) ?? '')![0];
  const made = (await api.get('/api/v1/api-keys')).body.data.find((key: any) => key.name === 'billing emitter');
  assert.equal(made.role, 'emitter');
  assert.deepEqual(made.app_ids, [app.id]);
  assert.equal(new Date(made.expires_at).getFullYear(), 2099);
  // The key works as an emitter: it emits, and may not list endpoints.
  const emitter = api.withKey(shownKey);
  assert.equal(
    (await emitter.post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid', payload: {} })).status,
    201,
  );
  assert.equal((await emitter.get(`/api/v1/endpoints?app_id=${app.id}`)).status, 403);

  const row = page.locator(`#keys tr[data-key-id="${made.id}"]`);
  assert.deepEqual(
    (await row.locator('td').allTextContents()).slice(0, 3),
    ['billing emitter', 'emitter', app.name],
    'the row names its role and application',
  );
  await row.locator('button:text("Revoke")').click();
  await page.waitForFunction(
    (id) => /^revoked/.test(document.querySelector(`#keys tr[data-key-id="${id}"] td:nth-child(4)`)?.textContent ?? ''),
    made.id,
  );
  assert.equal(
    (await emitter.post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid', payload: {} })).status,
    401,
  );

  // A reader signs in and reads; what it may not do is said beside the form.
  const reader = (await api.post('/api/v1/api-keys', { name: 'dashboard', role: 'reader' })).body.key as string;
  const readerPage = await watched.context.newPage();
  readerPage.on('pageerror', (error) => watched.problems.push(error.message));
  await readerPage.goto(`${service.url}/console#/applications`);
  await readerPage.fill('#sign-in input[name=key]', reader);
  await readerPage.click('#sign-in button[type=submit]');
  await readerPage.waitForSelector(`#applications tr[data-app-id="${app.id}"]`);
  await readerPage.fill('#add-application input[name=name]', 'Not allowed');
  await readerPage.click('#add-application button[type=submit]');
  await readerPage.waitForFunction(() =>
    /role reader cannot POST \/api\/v1\/applications: it may only read/.test(
      document.querySelector('#add-application .note')?.textContent ?? '',
    ),
  );
  await readerPage.close();
  await finish(watched, 'console-keys');
});

test("in a browser: the audit log lists who changed what, filters by resource, and an endpoint's page shows its own history", async (t) => {
  const watched = await watchedPage(t);
  const { page } = watched;
  const audited = (await api.post('/api/v1/endpoints', { app_id: app.id, url: `${receiver.url}/audited` })).body;
  await api.patch(`/api/v1/endpoints/${audited.id}`, { description: 'audited once' });
  await page.goto(`${service.url}/console#/audit`);
  await signIn(page);
  await shown(page, 'audit');
  const updated = page.locator('#audit tr', { hasText: 'endpoint.updated' }).first();
  await updated.waitFor();
  const cells = await updated.locator('td').allTextContents();
  assert.match(cells[1]!, /^key key_/, 'who: the key');
  assert.equal(cells[3], audited.id);
  assert.match(cells[4]!, /description: "" → "audited once"/, 'the change, before and after');

  // Filtered by the resource: only its entries.
  await page.fill('#audit-filter input[name=resource_id]', audited.id);
  await page.click('#audit-filter button[type=submit]');
  await page.waitForFunction(() => location.hash.includes('resource_id='));
  await page.waitForFunction(() => document.querySelectorAll('#audit tbody tr').length === 2, undefined, {
    timeout: 5_000,
  });
  const actions = await page.locator('#audit tbody tr td:nth-child(3)').allTextContents();
  assert.deepEqual(actions, ['endpoint.updated', 'endpoint.created']);

  // The endpoint's page: its history under its deliveries.
  await page.goto(`${service.url}/console#/endpoints/${audited.id}`);
  await shown(page, 'endpoint');
  await page.locator('#endpoint-history tr', { hasText: 'endpoint.created' }).waitFor();
  assert.equal(await page.locator('#endpoint-history tbody tr').count(), 2);
  await finish(watched, 'console-audit');
});

test('in a browser: the console opens on an overview of what needs a person, each item a link into its filtered view', async (t) => {
  const watched = await watchedPage(t);
  const { page } = watched;
  const off = (await api.post('/api/v1/endpoints', { app_id: app.id, url: `${receiver.url}/switched-off` })).body;
  await api.patch(`/api/v1/endpoints/${off.id}`, { status: 'disabled' });
  // A delivery that fails now, at an address that refuses connections (earlier tests retried the first one
  // into a success).
  const down = (await api.post('/api/v1/endpoints', { app_id: app.id, url: 'http://127.0.0.1:9/down' })).body;
  const emitted = await api.post('/api/v1/messages', {
    app_id: app.id,
    event_type: 'invoice.paid',
    payload: { invoice: 'inv_overview' },
  });
  const failedNow = await eventually(async () => {
    const page = await api.get(`/api/v1/deliveries?message_id=${emitted.body.id}&endpoint_id=${down.id}`);
    return page.body.data[0]?.status === 'failed' ? (page.body.data[0].id as string) : null;
  }, 10_000);
  await page.goto(`${service.url}/console`);
  await signIn(page);
  await shown(page, 'overview');
  assert.equal(await page.locator('#tabs button.current').textContent(), 'Overview');

  // The disabled endpoint heads the list of endpoints that need attention.
  const first = page.locator('#overview-endpoints li').first();
  await first.waitFor();
  assert.equal(await first.getAttribute('data-endpoint-id'), off.id);
  assert.equal(await first.locator('.status-disabled').textContent(), 'disabled');
  // The failed delivery: counted for the last hour and day, with the endpoint it failed at.
  const lastHour = page.locator('#overview-failed .failed-count').first();
  assert.match((await lastHour.textContent()) ?? '', /^[1-9]\d*\+? failed$/);
  await page.locator(`#overview-failed-endpoints li[data-endpoint-id="${down.id}"]`).waitFor();
  await page.locator('#overview-event-types li[data-event-type="invoice.paid"]').waitFor();
  assert.equal(await page.locator('#overview-circuits .none').textContent(), 'No circuit is open.');

  // A count opens the deliveries it counts.
  await lastHour.click();
  await shown(page, 'deliveries');
  assert.match(new URL(page.url()).hash, /^#\/deliveries\?status=failed&since=/);
  await page.locator('#deliveries tbody tr[data-delivery-id]').first().waitFor();
  const listed = await page
    .locator('#deliveries tbody tr[data-delivery-id]')
    .evaluateAll((rows) => rows.map((row) => (row as HTMLElement).dataset.deliveryId));
  assert.ok(listed.includes(failedNow), 'the delivery that failed is listed');
  assert.deepEqual(
    await page.locator('#deliveries tbody tr td.status-failed').count(),
    listed.length,
    'only failed ones',
  );
  await finish(watched, 'console-overview');

  // A new organization's overview says what to do first.
  const fresh = await bootstrap(service.url, 'Empty org');
  const empty = await watched.context.newPage();
  await empty.goto(`${service.url}/console`);
  await empty.fill('#sign-in input[name=key]', fresh.raw.test_key.key);
  await empty.click('#sign-in button[type=submit]');
  await empty.waitForSelector('#view-overview:not([hidden])');
  await empty.waitForFunction(() =>
    /Create an application first/.test(document.querySelector('#overview-start')?.textContent ?? ''),
  );
  await empty.click('#overview-start a');
  await empty.waitForSelector('#view-applications:not([hidden])');
  await empty.close();
});

test("in a browser: a delivery's page shows the request sent and the answer received side by side, newest attempt first", async (t) => {
  const watched = await watchedPage(t);
  const { page } = watched;
  const down = await new Receiver().start();
  t.after(() => down.stop());
  down.respond = () => ({
    status: 503,
    headers: { 'X-Maintenance': 'until 06:00' },
    body: '{"error":"maintenance","until":"06:00"}',
  });
  const inspected = (await api.post('/api/v1/endpoints', { app_id: app.id, url: `${down.url}/inspected` })).body;
  const emitted = await api.post('/api/v1/messages', {
    app_id: app.id,
    event_type: 'invoice.paid',
    payload: { invoice: 'inv_inspected', amount: 7 },
  });
  const deliveryId = await eventually(async () => {
    const list = await api.get(`/api/v1/deliveries?message_id=${emitted.body.id}&endpoint_id=${inspected.id}`);
    return list.body.data[0]?.status === 'failed' ? (list.body.data[0].id as string) : null;
  }, 10_000);
  await page.goto(`${service.url}/console#/deliveries/${deliveryId}`);
  await signIn(page);
  await shown(page, 'delivery');
  // Without a click: the request and the answer of the newest attempt.
  const sides = page.locator('#delivery-inspector .sides');
  await sides.waitFor();
  assert.equal(await sides.getAttribute('data-attempt'), '1');
  const request = sides.locator('.request');
  assert.match((await request.textContent()) ?? '', /POST http:\/\/127\.0\.0\.1:\d+\/inspected/);
  assert.match((await request.textContent()) ?? '', /Scheduled: sent when the delivery was due/);
  assert.deepEqual(JSON.parse((await request.locator('pre.request-body').textContent()) ?? ''), {
    invoice: 'inv_inspected',
    amount: 7,
  });
  assert.match((await request.locator('pre.request-headers').textContent()) ?? '', /^webhook-signature: v1,/m);
  const response = sides.locator('.response');
  assert.match((await response.textContent()) ?? '', /HTTP 503/);
  assert.equal(
    await response.locator('pre.response-body').textContent(),
    '{\n  "error": "maintenance",\n  "until": "06:00"\n}',
    'a JSON answer, formatted',
  );
  assert.match((await response.locator('pre.response-headers').textContent()) ?? '', /^x-maintenance: until 06:00$/m);

  // Retried and answered: the inspector shows the new attempt, a manual one.
  down.respond = () => ({ status: 200, body: 'thanks' });
  page.on('dialog', (dialog) => void dialog.accept());
  await page.locator('#delivery-detail button:text("Retry")').click();
  await page.waitForFunction(
    () => document.querySelector('#delivery-inspector .sides')?.getAttribute('data-attempt') === '2',
  );
  assert.match((await sides.locator('.request').textContent()) ?? '', /Manual: a retry someone asked for/);
  assert.match((await sides.locator('.response').textContent()) ?? '', /HTTP 200/);
  // The first attempt is one click away.
  await page.locator('#delivery-inspector .attempt-picker button[data-attempt="1"]').click();
  assert.equal(await sides.getAttribute('data-attempt'), '1');
  await finish(watched, 'console-inspector');
});
