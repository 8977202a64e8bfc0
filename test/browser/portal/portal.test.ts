import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { chooseAction, launchBrowser } from '../../support/browser.js';
import { eventually } from '../../support/receiver.js';
import { makeCa } from '../../support/certificates.js';
import {
  api,
  appWithEndpoint,
  appWithEndpoints,
  receiver,
  service,
  setUpPortalWorld,
} from '../../support/portal-world.js';

// A person's view of the customer portal behind portal_path, in headless Chromium (test/support/browser.ts):
// lists, forms, charts and the feedback beside them. What its routes answer, and to whom:
// test/contract/portal/portal.test.ts.

setUpPortalWorld();

test('in a browser: the portal shows more endpoints on request, and keeps them shown after a change', async (t) => {
  const { app, ids } = await appWithEndpoints('paged-browser', 51);
  const browser = await launchBrowser(t);
  const page = await browser.newPage();
  page.on('dialog', (dialog) => dialog.accept());
  await page.goto(service.url + app.portal_path);
  await page.waitForFunction(() => document.querySelectorAll('#endpoints tbody tr').length === 50);
  // Newest first: the oldest is on the second page.
  const last = page.locator(`#endpoints tbody tr[data-endpoint-id="${ids[0]}"]`);
  assert.equal(await last.count(), 0);
  await page.click('#endpoints-more button:text("More endpoints")');
  await last.waitFor();
  assert.equal(await page.locator('#endpoints tbody tr').count(), 51);
  assert.equal(await page.locator('#endpoints-more button').count(), 0, 'no more to show');
  // One actions menu per row, closed until asked for.
  assert.equal(await last.locator('td.actions button').filter({ visible: true }).count(), 0, 'no row of buttons');
  assert.equal(await last.locator('td.actions details.menu summary').textContent(), 'Actions');
  // A change reloads the list with both pages: the changed row stays, disabled.
  await chooseAction(last, 'Disable');
  await last.locator('.status-disabled').waitFor();
  assert.equal(await page.locator('#endpoints tbody tr').count(), 51);
});

test("in a browser: the portal draws an endpoint's attempts per hour", async (t) => {
  const { app, endpoint } = await appWithEndpoint('browser-stats');
  const before = receiver.received.length;
  await api.post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid', payload: { n: 1 } });
  await receiver.waitFor(before + 1);
  await eventually(
    async () => (await api.get(`/api/v1/endpoints/${endpoint.id}/stats`)).body.totals.success === 1,
    10_000,
    'the attempt counted',
  );
  const browser = await launchBrowser(t);
  const page = await browser.newPage();
  const problems: string[] = [];
  const requests: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(error.message));
  page.on('request', (request) => requests.push(request.url()));
  await page.goto(service.url + app.portal_path);
  await page.waitForSelector('#endpoints tbody tr');
  // The endpoint's page opens from its URL, its chart drawn at once.
  await page.click('#endpoints tbody tr:first-child a.open-endpoint');
  await page.waitForSelector('#stats-chart svg');
  assert.equal(await page.locator('#endpoint-section').isVisible(), true);
  assert.match((await page.locator('#endpoint-health').textContent()) ?? '', /100% of 1 succeeded, last 24 h/);
  assert.equal(await page.locator('#stats-chart svg .bucket').count(), 24);
  assert.equal(await page.locator('#stats-chart svg .bar-success').count(), 1);
  assert.equal(await page.locator('#stats-chart svg .bar-failure').count(), 0);
  assert.match((await page.locator('#stats-chart .chart-legend').textContent()) ?? '', /1 succeeded/);
  const shot = `${service.database.env.HERALD_DATA_DIR}/portal-stats.png`;
  await page.screenshot({ path: shot, fullPage: true });
  assert.ok(statSync(shot).size > 1000, 'the screenshot is an image');
  assert.deepEqual([...readFileSync(shot).subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], 'a PNG');
  assert.deepEqual(
    problems.filter((text) => !/^Failed to load resource: .*404/.test(text)),
    [],
    'console errors (a CSP violation is one)',
  );
  assert.deepEqual(
    requests.filter((url) => !url.startsWith(`${service.url}/`)),
    [],
    'requests to anywhere but the service',
  );
});

test('in a browser: the portal lists endpoints, adds one, sends a test event and shows its deliveries', async (t) => {
  const { app } = await appWithEndpoint('browser');
  const browser = await launchBrowser(t);
  const page = await browser.newPage();
  // Disable asks first: accepted here.
  page.on('dialog', (dialog) => dialog.accept());
  await page.goto(service.url + app.portal_path);

  await page.waitForSelector('#endpoints tbody tr');
  assert.equal(await page.locator('#mode').textContent(), 'Test');
  assert.match((await page.locator('#endpoints tbody').textContent()) ?? '', /\/browser/);

  // The added endpoint answers 500: its attempt line names the status once.
  receiver.respond = (request) =>
    request.path === '/browser-added' ? { status: 500, body: 'down' } : { status: 200, body: 'ok' };
  t.after(() => {
    receiver.respond = () => ({ status: 200, body: 'ok' });
  });
  await page.fill('#add-endpoint input[name=url]', `${receiver.url}/browser-added`);
  await page.click('#add-endpoint button[type=submit]');
  await page.waitForSelector('#add-endpoint .note');
  assert.match(
    (await page.locator('#add-endpoint .note').textContent()) ?? '',
    /signing secret \(shown once\): whsec_/,
  );
  await page.waitForFunction(() => document.querySelectorAll('#endpoints tbody tr').length === 2);

  const before = receiver.received.length;
  await page.click('#send-test button[type=submit]');
  await page.waitForSelector('#messages tbody tr');
  await receiver.waitFor(before + 2);
  // Let the attempts be recorded, then open the deliveries of the test message.
  await new Promise((r) => setTimeout(r, 300));
  await page.click('#messages tbody tr:first-child button:text("Deliveries")');
  await page.waitForSelector('#deliveries .delivery');
  const text = (await page.locator('#deliveries').textContent()) ?? '';
  assert.match(text, /success/);
  // Each delivery's attempts are a table: number, trigger, status, answer, duration, age.
  const attempts = (
    await page
      .locator('#deliveries .attempts tbody tr')
      .evaluateAll((rows) =>
        rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent).join(' | ')),
      )
  ).sort();
  assert.equal(attempts.length, 2);
  assert.match(attempts[0] ?? '', /^#1 \| scheduled \| failed \| HTTP 500 \| \d+ ms \| \d+ s ago$/);
  assert.match(attempts[1] ?? '', /^#1 \| scheduled \| success \| HTTP 200 \| \d+ ms \| \d+ s ago$/);
  // Rows a person reads: the event type and the endpoint URL first; a failed attempt with retries left is pending.
  assert.match(text, /invoice\.paid → \S+\/browser-added · pending · 1 attempt\(s\)/);

  // The list says how each message went at each endpoint, without opening it: reloaded, the test message
  // shows a pending (retrying) delivery before its successful one, each mark naming its endpoint's URL.
  await page.reload();
  const marks = page.locator('#messages tbody tr:first-child td.delivered .mark');
  await marks.first().waitFor();
  assert.deepEqual(await marks.allTextContents(), ['pending', 'success']);
  assert.match((await marks.first().getAttribute('title')) ?? '', /\/browser-added$/);
  // Each endpoint's success over the last 24 hours, in the list.
  await page.waitForFunction(() =>
    [...document.querySelectorAll('#endpoints tbody td.ratio')].every((cell) => cell.textContent !== '…'),
  );
  const shares = await page.locator('#endpoints tbody td.ratio').allTextContents();
  assert.deepEqual(shares.slice().sort(), ['0% of 1', '100% of 1']);
  // URLs break after their separators only: each piece between <wbr>s ends with one.
  const pieces = await page
    .locator('#endpoints tbody tr:first-child code.url')
    .evaluate((code) => [...code.childNodes].filter((node) => node.nodeType === 3).map((node) => node.textContent));
  assert.ok(pieces.length > 3, JSON.stringify(pieces));
  assert.ok(
    pieces.slice(0, -1).every((piece) => /[/.?&=-]$/.test(piece ?? '')),
    JSON.stringify(pieces),
  );

  // Headers: edited as lines of "Name: value"; a credential comes back redacted.
  await chooseAction(page.locator('#endpoints tbody tr:first-child'), 'Edit headers');
  await page.fill('#endpoints tbody tr:first-child textarea', 'X-Tenant: acme\nAuthorization: Bearer browser-s3cret');
  await page.click('#endpoints tbody tr:first-child button:text("Save headers")');
  await page.waitForSelector('#endpoints .headers');
  const headersShown = (await page.locator('#endpoints .headers').first().textContent()) ?? '';
  assert.match(headersShown, /X-Tenant: acme/);
  assert.match(headersShown, /Authorization: <redacted>/);
  assert.doesNotMatch((await page.content()) ?? '', /browser-s3cret/);
  await chooseAction(page.locator('#endpoints tbody tr:first-child'), 'Delivery');
  await page.fill('#endpoints tbody tr:first-child input[name=rate_limit]', '7');
  await page.fill('#endpoints tbody tr:first-child input[name=retry_schedule]', '0s, 30s,1h');
  await page.uncheck('#endpoints tbody tr:first-child input[name=circuit]');
  await page.click('#endpoints tbody tr:first-child button:text("Save delivery settings")');
  await page.waitForSelector('#endpoints .rate-limit');
  assert.match(
    (await page.locator('#endpoints .rate-limit').first().textContent()) ?? '',
    /At most 7 requests a second/,
  );
  assert.match(
    (await page.locator('#endpoints .retry-schedule').first().textContent()) ?? '',
    /Retried after 0s, 30s, 1h \(3 attempts at most\)/,
  );
  const portalEndpoint = (await api.get(`/api/v1/endpoints?app_id=${app.id}`)).body.data.find(
    (e: { retry_schedule: string[] | null }) => e.retry_schedule !== null,
  );
  assert.deepEqual(portalEndpoint.circuit, { enabled: false }, 'the breaker turned off from the portal');
  // A step past 7 days is refused beside the form, and nothing changes.
  await chooseAction(page.locator('#endpoints tbody tr:first-child'), 'Delivery');
  await page.fill('#endpoints tbody tr:first-child input[name=retry_schedule]', '0s, 8d');
  await page.click('#endpoints tbody tr:first-child button:text("Save delivery settings")');
  await page.waitForFunction(() =>
    /retry_schedule\[1\]/.test(document.querySelector('#endpoints .delivery-form')?.textContent ?? ''),
  );
  assert.match((await page.locator('#endpoints .retry-schedule').first().textContent()) ?? '', /0s, 30s, 1h/);

  await chooseAction(page.locator('#endpoints tbody tr:first-child'), 'Recover');
  await page.click('#endpoints tbody tr:first-child button:text("Recover failed deliveries")');
  await page.waitForFunction(() =>
    /Recovery started \(task_/.test(document.querySelector('#endpoints .recover-form .note')?.textContent ?? ''),
  );

  await chooseAction(page.locator('#endpoints tbody tr:first-child'), 'Disable');
  await page.waitForSelector('#endpoints .status-disabled');
  await page.screenshot({ path: `${service.database.env.HERALD_DATA_DIR}/portal.png`, fullPage: true });
  if (process.env.SUITE_PORTAL_SCREENSHOT)
    await page.screenshot({ path: process.env.SUITE_PORTAL_SCREENSHOT, fullPage: true });
});

test('in a browser: the portal tries and saves a filter, and says so beside the form', async (t) => {
  const { app, endpoint } = await appWithEndpoint('browser-filter');
  const browser = await launchBrowser(t);
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(error.message));
  await page.goto(service.url + app.portal_path);
  const row = page.locator(`#endpoints tbody tr[data-endpoint-id="${endpoint.id}"]`);
  await chooseAction(row, 'Filter');
  const form = row.locator('form.filter-form');
  const result = form.locator('.filter-result');
  await form.locator('textarea[name=filter]').fill('{"data.region": {"$in": ["eu"]}}');
  await form.locator('textarea[name=payload]').fill('{"region": "us"}');
  await form.locator('button:text("Test filter")').click();
  await eventually(async () => /^Does not match/.test((await result.textContent()) ?? ''), 5_000, 'no match');
  await form.locator('button:text("Save filter")').click();
  await eventually(async () => /^Filter saved/.test((await result.textContent()) ?? ''), 5_000, 'saved');
  assert.deepEqual((await api.get(`/api/v1/endpoints/${endpoint.id}`)).body.filter, { 'data.region': { $in: ['eu'] } });
  assert.match((await row.locator('.filter').textContent()) ?? '', /Filter: \{"data.region":\{"\$in":\["eu"\]\}\}/);
  // The verdict is within sight of the button that asked for it.
  const box = await result.boundingBox();
  const viewport = page.viewportSize()!;
  const button = await form.locator('button:text("Save filter")').boundingBox();
  assert.ok(box && button && Math.abs(box.y - button.y) < viewport.height / 2, 'the result sits by the form');
  const shot = `${service.database.env.HERALD_DATA_DIR}/portal-filter.png`;
  await page.screenshot({ path: shot, fullPage: true });
  assert.ok(statSync(shot).size > 1000);
  assert.deepEqual(problems, []);
});

test('in a browser: the portal edits an endpoint’s mutual TLS and OAuth2 settings, and saves them sealed', async (t) => {
  const { app, endpoint } = await appWithEndpoint('security');
  const ca = makeCa('Portal receiver CA');
  const identity = ca.issue('portal-client', 'client', 10);
  const browser = await launchBrowser(t);
  const page = await browser.newPage();
  await page.goto(service.url + app.portal_path);
  await page.waitForSelector('#endpoints tbody tr');
  await chooseAction(page.locator('#endpoints tbody tr:first-child'), 'Receiver security');
  const form = page.locator('#endpoints tbody tr:first-child .receiver-settings-form');
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
  await form.locator('[name=ca]').fill(ca.cert);
  await form.locator('[name=token_url]').fill('https://auth.example/oauth/token');
  await form.locator('[name=client_id]').fill('portal-client');
  await form.locator('[name=client_secret]').fill('portal-cl1ent-s3cret');
  await form.locator('[name=scope]').fill('webhooks');
  await form.locator('[name=client_auth]').selectOption('post');
  await form.locator('button[type=submit]').click();
  await page.waitForFunction(() =>
    /Receiver settings saved/.test(document.querySelector('#endpoints tbody tr:first-child .note')?.textContent ?? ''),
  );
  await page.waitForSelector('#endpoints .auth');

  const saved = (await api.get(`/api/v1/endpoints/${endpoint.id}`)).body;
  assert.equal(saved.tls.client_cert, identity.cert.trim());
  assert.equal(saved.tls.client_key, '<redacted>');
  assert.equal(saved.tls.ca, ca.cert.trim());
  assert.ok(saved.tls.client_cert_not_after);
  assert.deepEqual(saved.auth, {
    type: 'oauth2_client_credentials',
    token_url: 'https://auth.example/oauth/token',
    client_id: 'portal-client',
    client_secret: '<redacted>',
    scope: 'webhooks',
    audience: null,
    client_auth: 'post',
  });
  const stored = () =>
    service.store.ctx.db.selectFrom('endpoints').selectAll().where('id', '=', endpoint.id).executeTakeFirstOrThrow();
  const row = await stored();
  assert.equal(service.store.endpoints.tlsKey(row), identity.key.trim());
  assert.equal(service.store.endpoints.authSecret(row), 'portal-cl1ent-s3cret');
  // The page shows neither the key nor the secret; saved again as shown, both are kept.
  await chooseAction(page.locator('#endpoints tbody tr:first-child'), 'Receiver security');
  assert.equal(await form.locator('[name=client_key]').inputValue(), '<redacted>');
  assert.equal(await form.locator('[name=client_secret]').inputValue(), '<redacted>');
  const content = await page.content();
  assert.ok(!content.includes('portal-cl1ent-s3cret') && !content.includes(identity.key.split('\n')[1]!));
  await form.locator('button[type=submit]').click();
  // Saved, the row is drawn again without the form, and says so.
  await form.waitFor({ state: 'detached' });
  await page.waitForFunction(() =>
    /Receiver settings saved/.test(document.querySelector('#endpoints tbody tr:first-child .note')?.textContent ?? ''),
  );
  const again = await stored();
  assert.equal(service.store.endpoints.tlsKey(again), identity.key.trim());
  assert.equal(service.store.endpoints.authSecret(again), 'portal-cl1ent-s3cret');
  // A portal endpoint's token server must be public, as its URL must.
  await chooseAction(page.locator('#endpoints tbody tr:first-child'), 'Receiver security');
  await form.locator('[name=token_url]').fill('http://10.0.0.1/token');
  await form.locator('button[type=submit]').click();
  await form.locator('.note.error').waitFor();
  assert.match((await form.locator('.note.error').textContent()) ?? '', /auth\.token_url/);
});

test("in a browser: the portal says an error beside the form that caused it, asks before rotating a secret, and shows a delivery's payload and answers", async (t) => {
  const { app, endpoint } = await appWithEndpoint('portal-feedback');
  receiver.respond = (request) =>
    request.path === '/portal-feedback' ? { status: 422, body: 'unknown invoice' } : { status: 200, body: 'ok' };
  t.after(() => {
    receiver.respond = () => ({ status: 200, body: 'ok' });
  });
  const before = receiver.received.length;
  const emitted = await api.post('/api/v1/messages', {
    app_id: app.id,
    event_type: 'invoice.paid',
    payload: { invoice: 'inv_77' },
  });
  await receiver.waitFor(before + 1);
  const deliveryId = emitted.body.delivery_ids[0] as string;
  await eventually(
    async () => ((await api.get(`/api/v1/deliveries/${deliveryId}`)).body.attempts.length > 0 ? true : null),
    10_000,
    'the attempt recorded',
  );

  const browser = await launchBrowser(t);
  const page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
  const problems: string[] = [];
  const requests: string[] = [];
  page.on('pageerror', (error) => problems.push(error.message));
  page.on('request', (request) => requests.push(request.url()));
  const asked: string[] = [];
  page.on('dialog', (dialog) => {
    asked.push(dialog.message());
    void dialog.dismiss();
  });
  await page.goto(service.url + app.portal_path);
  await page.waitForSelector('#endpoints tbody tr');

  // A refused URL (a private address): the error is in view, inside the form that sent it.
  await page.fill('#add-endpoint input[name=url]', 'http://10.0.0.1/hook');
  await page.click('#add-endpoint button[type=submit]');
  const error = page.locator('#add-endpoint .note.error');
  await error.waitFor();
  assert.ok(((await error.textContent()) ?? '').length > 0);
  const box = await error.boundingBox();
  assert.ok(box && box.y >= 0 && box.y + box.height <= 700, `the error is within the viewport: ${JSON.stringify(box)}`);
  assert.equal(await page.locator('#notice').isVisible(), false, 'nothing at the top of the page');

  // Rotating a secret asks first; dismissed, the secret is the same.
  const sealed = async () =>
    (
      await service.store.ctx.db
        .selectFrom('endpoints')
        .select(['secret_sealed', 'previous_secret_sealed'])
        .where('id', '=', endpoint.id)
        .executeTakeFirstOrThrow()
    ).secret_sealed;
  const secret = await sealed();
  await chooseAction(page.locator(`#endpoints tbody tr[data-endpoint-id="${endpoint.id}"]`), 'Rotate secret');
  assert.equal(asked.length, 1);
  assert.match(asked[0] ?? '', /Rotate the signing secret/);
  assert.equal(await sealed(), secret);

  // The delivery reads as a sentence, and shows the payload and the receiver's answer on demand.
  await page.click(`#messages tbody tr[data-message-id="${emitted.body.id}"] button:text("Deliveries")`);
  const item = page.locator(`#deliveries .delivery[data-delivery-id="${deliveryId}"]`);
  await item.waitFor();
  assert.match(
    (await item.locator('.delivery-head').textContent()) ?? '',
    /^invoice\.paid → \S+\/portal-feedback · pending · [12] attempt\(s\)/,
  );
  await item.locator('button:text("Show payload and answers")').click();
  // Its retry may have been made by now: the newest answer comes first.
  await item.locator('.answers .response-body').first().waitFor();
  assert.deepEqual(JSON.parse((await item.locator('.answers pre.payload').textContent()) ?? ''), { invoice: 'inv_77' });
  assert.match((await item.locator('.answer-head').first().textContent()) ?? '', /^#\d · HTTP 422 · \d+ ms/);
  assert.equal(await item.locator('.answers .response-body').first().textContent(), 'unknown invoice');
  await item.locator('.answers .request-headers summary').first().click();
  assert.match(
    (await item.locator('.answers .request-headers pre').first().textContent()) ?? '',
    new RegExp(`^webhook-id: ${emitted.body.id}$`, 'm'),
  );
  assert.match(
    (await item.locator('.answers .response-headers summary').first().textContent()) ?? '',
    /^Response headers \(\d+\)$/,
  );

  const shot = `${service.database.env.HERALD_DATA_DIR}/portal-feedback.png`;
  await page.screenshot({ path: shot, fullPage: true });
  assert.ok(statSync(shot).size > 1000, 'the screenshot is an image');
  assert.deepEqual(problems, []);
  assert.deepEqual(
    requests.filter((url) => !url.startsWith(`${service.url}/`)),
    [],
    'requests to anywhere but the service',
  );
});
