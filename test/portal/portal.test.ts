import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { startTestService, type TestService } from '../support/service.js';
import { browserSkip, launchBrowser } from '../support/browser.js';
import { bootstrap, Client } from '../support/client.js';
import { Receiver, eventually } from '../support/receiver.js';
import { makeCa } from '../support/certificates.js';

// The customer portal behind portal_path: one application's endpoints, messages and deliveries, and the
// actions a customer may take, all limited to that one application by its token.

let service: TestService;
let receiver: Receiver;
let api: Client;
let liveApi: Client;

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

async function appWithEndpoint(name: string) {
  const app = (await api.post('/api/v1/applications', { name })).body;
  const endpoint = (await api.post('/api/v1/endpoints', { app_id: app.id, url: `${receiver.url}/${name}` })).body;
  return { app, endpoint, portal: new Client(service.url + app.portal_path) };
}

test('the portal page opens for a valid token and is 404 for any other', async () => {
  const { app } = await appWithEndpoint('page');
  const page = await fetch(service.url + app.portal_path);
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type') ?? '', /text\/html/);
  assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
  assert.match(await page.text(), /Webhooks for <span id="app-name">page<\/span>/);

  const wrong = await fetch(`${service.url}/portal/${'x'.repeat(43)}`);
  assert.equal(wrong.status, 404);
  const wrongApi = await new Client(`${service.url}/portal/${'x'.repeat(43)}`).get('/api/endpoints');
  assert.equal(wrongApi.status, 404);
  assert.equal(wrongApi.body.error.code, 'not_found');
});

test('a new portal_path ends the previous link at once; other links and other environments are untouched', async () => {
  const { app, portal: old } = await appWithEndpoint('rotated');
  const { portal: neighbour } = await appWithEndpoint('neighbour');
  assert.equal((await old.get('/api/endpoints')).status, 200);

  const rotated = await api.post(`/api/v1/applications/${app.id}/rotate-portal-path`);
  assert.equal(rotated.status, 200);
  assert.equal(rotated.body.id, app.id);
  assert.match(rotated.body.portal_path, /^\/portal\/[A-Za-z0-9]{32,}$/);
  assert.notEqual(rotated.body.portal_path, app.portal_path);

  assert.equal((await fetch(service.url + app.portal_path)).status, 404, 'the old page');
  assert.equal((await old.get('/api/endpoints')).status, 404, "the old link's routes");
  const fresh = new Client(service.url + rotated.body.portal_path);
  const endpoints = await fresh.get('/api/endpoints');
  assert.equal(endpoints.status, 200);
  assert.equal(endpoints.body.data.length, 1, "the new link opens the same application's data");
  assert.equal((await fetch(service.url + rotated.body.portal_path)).status, 200);
  assert.equal((await api.get(`/api/v1/applications/${app.id}`)).body.portal_path, undefined, 'shown once');
  assert.equal((await neighbour.get('/api/endpoints')).status, 200, "another application's link");

  // A Live key does not see a Test application; an unknown one is 404.
  assert.equal((await liveApi.post(`/api/v1/applications/${app.id}/rotate-portal-path`)).status, 404);
  assert.equal((await fresh.get('/api/endpoints')).status, 200, 'the Live attempt changed nothing');
  assert.equal((await api.post('/api/v1/applications/app_doesnotexist/rotate-portal-path')).status, 404);
});

test('a portal link opens with a trailing slash too, and its token never reaches the log', async (t) => {
  const lines: string[] = [];
  const logged = await startTestService({}, undefined, lines);
  t.after(() => logged.stop());
  const { test: client } = await bootstrap(logged.url);
  const app = (await client.post('/api/v1/applications', { name: 'logged' })).body;
  const token = app.portal_path.split('/').pop() as string;
  assert.equal((await fetch(`${logged.url}${app.portal_path}/`)).status, 200);
  const portal = new Client(logged.url + app.portal_path);
  assert.equal((await portal.get('/api/endpoints/')).status, 200);
  assert.equal((await portal.get('/api/endpoints')).status, 200);
  // Also spelled so that a plain match on the raw URL would miss it: the router decodes %70 to p.
  assert.equal((await fetch(`${logged.url}/%70ortal/${token}/api/endpoints`)).status, 200);
  await eventually(
    async () => lines.filter((line) => line.includes('/portal/:token')).length >= 4,
    5_000,
    'the request lines',
  );
  assert.deepEqual(
    lines.filter((line) => line.includes(token)),
    [],
    'lines with the token',
  );
});

test("a portal token reaches its own application's data and nothing else", async () => {
  const a = await appWithEndpoint('alpha');
  const b = await appWithEndpoint('beta');

  const endpoints = await a.portal.get('/api/endpoints');
  assert.equal(endpoints.status, 200);
  assert.deepEqual(
    endpoints.body.data.map((e: { id: string }) => e.id),
    [a.endpoint.id],
  );

  // b's endpoint through a's portal: not found, and unchanged.
  assert.equal((await a.portal.patch(`/api/endpoints/${b.endpoint.id}`, { status: 'disabled' })).status, 404);
  assert.equal((await a.portal.post(`/api/endpoints/${b.endpoint.id}/rotate-secret`)).status, 404);
  assert.equal((await api.get(`/api/v1/endpoints/${b.endpoint.id}`)).body.status, 'active');

  const emitted = await api.post('/api/v1/messages', {
    app_id: b.app.id,
    event_type: 'invoice.paid',
    payload: { n: 1 },
  });
  assert.equal(emitted.status, 201);
  assert.deepEqual((await a.portal.get('/api/messages')).body.data, []);
  assert.equal((await a.portal.get(`/api/messages/${emitted.body.id}/deliveries`)).status, 404);
  assert.equal((await a.portal.post(`/api/deliveries/${emitted.body.delivery_ids[0]}/retry`)).status, 404);
  const own = await b.portal.get('/api/messages');
  assert.deepEqual(
    own.body.data.map((m: { id: string }) => m.id),
    [emitted.body.id],
  );
});

test('customers add and disable endpoints, rotate a secret, send a test event and retry from the portal', async () => {
  const { app, portal } = await appWithEndpoint('gamma');

  const added = await portal.post('/api/endpoints', {
    url: `${receiver.url}/gamma-added`,
    event_types: ['invoice.paid'],
  });
  assert.equal(added.status, 201);
  assert.match(added.body.signing_secret, /^whsec_/);
  const listed = await api.get(`/api/v1/endpoints?app_id=${app.id}`);
  assert.equal(listed.body.data.length, 2);

  const bad = await portal.post('/api/endpoints', { url: 'ftp://example.com' });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.code, 'invalid_request');

  const rotated = await portal.post(`/api/endpoints/${added.body.id}/rotate-secret`);
  assert.equal(rotated.status, 200);
  assert.notEqual(rotated.body.signing_secret, added.body.signing_secret);

  const before = receiver.received.length;
  const sent = await portal.post('/api/send-test', { event_type: 'invoice.paid' });
  assert.equal(sent.status, 202);
  assert.equal(sent.body.delivery_ids.length, 2);
  await receiver.waitFor(before + 2);

  const deliveries = await eventually(
    async () => {
      const reply = await portal.get(`/api/messages/${sent.body.id}/deliveries`);
      return reply.body.data.every((d: { status: string }) => d.status === 'success') ? reply.body.data : null;
    },
    10_000,
    'test event delivered',
  );
  assert.equal(deliveries[0].attempts.length, 1);

  const retried = await portal.post(`/api/deliveries/${deliveries[0].id}/retry`);
  assert.equal(retried.status, 200);
  assert.equal(retried.body.attempt_number, 2);

  const disabled = await portal.patch(`/api/endpoints/${added.body.id}`, { status: 'disabled' });
  assert.equal(disabled.body.status, 'disabled');
  assert.equal((await api.get(`/api/v1/endpoints/${added.body.id}`)).body.status, 'disabled');
});

test('a Live application portal never sends test events', async () => {
  const app = (await liveApi.post('/api/v1/applications', { name: 'live-app' })).body;
  const portal = new Client(service.url + app.portal_path);
  const reply = await portal.post('/api/send-test', {});
  assert.equal(reply.status, 403);
  assert.equal(reply.body.error.code, 'test_mode_only');
  assert.equal((await portal.get('/api/app')).body.livemode, true);
});

test("a message's deliveries come in bounded pages, each attempt without the receiver's answer", async () => {
  const app = (await api.post('/api/v1/applications', { name: 'many' })).body;
  // The receiver answers 500 with a long body of control characters (each escaped six-fold in JSON).
  const noisy = await new Receiver().start();
  noisy.respond = () => ({ status: 500, body: '\u0001'.repeat(4_000) });
  try {
    for (let i = 0; i < 30; i++)
      assert.equal((await api.post('/api/v1/endpoints', { app_id: app.id, url: `${noisy.url}/e${i}` })).status, 201);
    const emitted = await api.post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid', payload: {} });
    await noisy.waitFor(30, 20_000);
    const portal = new Client(service.url + app.portal_path);
    const first = await eventually(
      async () => {
        const reply = await portal.get(`/api/messages/${emitted.body.id}/deliveries`);
        return reply.body.data.every((d: { attempts: unknown[] }) => d.attempts.length > 0) ? reply : null;
      },
      20_000,
      'attempts recorded',
    );
    assert.equal(first.body.data.length, 25);
    assert.equal(first.body.has_more, true);
    const second = await portal.get(`/api/messages/${emitted.body.id}/deliveries?cursor=${first.body.next_cursor}`);
    assert.equal(second.status, 200);
    assert.equal(second.body.data.length, 5);
    assert.equal(second.body.has_more, false);
    const ids = [...first.body.data, ...second.body.data].map((d: { id: string }) => d.id);
    assert.equal(new Set(ids).size, 30, 'every delivery once across the pages');
    for (const delivery of [...first.body.data, ...second.body.data]) {
      assert.ok(delivery.attempts.length <= 5);
      for (const attempt of delivery.attempts) {
        assert.equal(attempt.response_status, 500);
        assert.ok(!('response_body' in attempt), 'no response body in a list');
      }
    }
    assert.ok(JSON.stringify(first.body).length < 50_000, 'the page stays small');
    const badCursor = await portal.get(`/api/messages/${emitted.body.id}/deliveries?cursor=msg_nope`);
    assert.equal(badCursor.status, 400);
  } finally {
    await noisy.stop();
  }
});

test("the portal reads its own messages' payloads and one delivery's attempts with the receiver's answers; 404 for another application's", async () => {
  const a = await appWithEndpoint('answers-a');
  const b = await appWithEndpoint('answers-b');
  receiver.respond = (request) =>
    request.path === '/answers-a' ? { status: 500, body: 'a says no' } : { status: 200, body: 'ok' };
  try {
    const before = receiver.received.length;
    const emitted = await api.post('/api/v1/messages', {
      app_id: a.app.id,
      event_type: 'invoice.paid',
      payload: { amount: 42 },
    });
    const other = await api.post('/api/v1/messages', { app_id: b.app.id, event_type: 'invoice.paid', payload: {} });
    await receiver.waitFor(before + 2);
    const deliveryId = emitted.body.delivery_ids[0] as string;

    const payload = await a.portal.get(`/api/messages/${emitted.body.id}/payload`);
    assert.equal(payload.status, 200);
    assert.equal(payload.headers.get('cache-control'), 'no-store');
    assert.deepEqual(payload.body.payload, { amount: 42 });
    assert.equal(payload.body.event_type, 'invoice.paid');

    const delivery = await eventually(
      async () => {
        const reply = await a.portal.get(`/api/deliveries/${deliveryId}`);
        return reply.body.attempts?.length > 0 ? reply : null;
      },
      10_000,
      'the attempt recorded',
    );
    assert.equal(delivery.body.id, deliveryId);
    assert.equal(delivery.body.event_type, 'invoice.paid');
    assert.equal(delivery.body.attempts[0].response_status, 500);
    assert.equal(delivery.body.attempts[0].response_body, 'a says no');

    // Another application's message or delivery, through this link: 404, like an unknown one.
    assert.equal((await a.portal.get(`/api/messages/${other.body.id}/payload`)).status, 404);
    assert.equal((await a.portal.get(`/api/deliveries/${other.body.delivery_ids[0]}`)).status, 404);
    assert.equal((await b.portal.get(`/api/deliveries/${deliveryId}`)).status, 404);
    assert.equal((await a.portal.get('/api/deliveries/dlv_doesnotexist')).status, 404);

    // A payload no longer stored is 410.
    await service.store.ctx.db.deleteFrom('payloads').where('message_id', '=', emitted.body.id).execute();
    const gone = await a.portal.get(`/api/messages/${emitted.body.id}/payload`);
    assert.equal(gone.status, 410);
    assert.equal(gone.body.error.code, 'payload_gone');
  } finally {
    receiver.respond = () => ({ status: 200, body: 'ok' });
  }
});

test('the portal lists its messages 50 a page, newest first; cursor reads the next', async () => {
  const { app, portal } = await appWithEndpoint('paged-messages');
  const ids: string[] = [];
  for (let i = 0; i < 52; i++)
    ids.push(
      (await api.post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid', payload: { i } })).body.id,
    );
  await assertTwoPages(portal, '/api/messages', [...ids].reverse(), 'dlv_nope');
});

/**
 * A portal list of 50 a page holds `expected` in that order over two pages, the cursor reading the second;
 * a cursor of another kind of id is 400.
 */
async function assertTwoPages(portal: Client, path: string, expected: string[], foreignCursor: string) {
  const first = await portal.get(path);
  assert.equal(first.body.data.length, 50);
  assert.equal(first.body.has_more, true);
  const second = await portal.get(`${path}?cursor=${first.body.next_cursor}`);
  assert.equal(second.status, 200);
  assert.equal(second.body.has_more, false);
  assert.deepEqual(
    [...first.body.data, ...second.body.data].map((item: { id: string }) => item.id),
    expected,
  );
  assert.equal((await portal.get(`${path}?cursor=${foreignCursor}`)).status, 400);
}

/** An application with `count` endpoints, and their ids, oldest first. */
async function appWithEndpoints(name: string, count: number) {
  const { app, endpoint, portal } = await appWithEndpoint(name);
  const ids = [endpoint.id as string];
  for (let i = 1; i < count; i++)
    ids.push((await api.post('/api/v1/endpoints', { app_id: app.id, url: `${receiver.url}/${name}-${i}` })).body.id);
  return { app, portal, ids };
}

test('the portal lists its endpoints 50 a page, newest first; cursor reads the next', async () => {
  const { portal, ids } = await appWithEndpoints('paged-endpoints', 51);
  await assertTwoPages(portal, '/api/endpoints', [...ids].reverse(), 'evt_nope');
});

test('in a browser: the portal shows more endpoints on request, and keeps them shown after a change', {
  skip: browserSkip,
}, async (t) => {
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
  // A change reloads the list with both pages: the changed row stays, disabled.
  await last.locator('button:text("Disable")').click();
  await last.locator('.status-disabled').waitFor();
  assert.equal(await page.locator('#endpoints tbody tr').count(), 51);
});

test("the portal's stats of its own endpoints: attempts per hour as the API counts them, 404 for another application's", async () => {
  const a = await appWithEndpoint('stats-a');
  const b = await appWithEndpoint('stats-b');
  const before = receiver.received.length;
  for (let n = 0; n < 3; n++)
    assert.equal(
      (await api.post('/api/v1/messages', { app_id: a.app.id, event_type: 'invoice.paid', payload: { n } })).status,
      201,
    );
  await receiver.waitFor(before + 3);
  const stats = await eventually(
    async () => {
      const reply = await a.portal.get(`/api/endpoints/${a.endpoint.id}/stats`);
      return reply.body.totals?.success === 3 ? reply : null;
    },
    10_000,
    'the attempts counted',
  );
  assert.equal(stats.status, 200);
  assert.equal(stats.headers.get('cache-control'), 'no-store');
  assert.equal(stats.body.object, 'endpoint_stats');
  assert.equal(stats.body.buckets.length, 24);
  assert.deepEqual(
    stats.body,
    (await api.get(`/api/v1/endpoints/${a.endpoint.id}/stats?since=${stats.body.since}&until=${stats.body.until}`))
      .body,
  );

  // Another application's endpoint, through this link: 404, like an unknown one; a bad window: 400.
  const other = await a.portal.get(`/api/endpoints/${b.endpoint.id}/stats`);
  assert.equal(other.status, 404);
  assert.equal(other.body.error.code, 'not_found');
  assert.equal((await a.portal.get('/api/endpoints/ep_doesnotexist/stats')).status, 404);
  const reversed = await a.portal.get(
    `/api/endpoints/${a.endpoint.id}/stats?since=${new Date().toISOString()}&until=${new Date(Date.now() - 1000).toISOString()}`,
  );
  assert.equal(reversed.status, 400);
  assert.equal(reversed.body.error.code, 'invalid_request');
  assert.equal((await b.portal.get(`/api/endpoints/${b.endpoint.id}/stats`)).body.totals.success, 0);
});

test("in a browser: the portal draws an endpoint's attempts per hour", { skip: browserSkip }, async (t) => {
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
  await page.click('#endpoints tbody tr:first-child button:text("Stats")');
  await page.waitForSelector('#stats-chart svg');
  assert.equal(await page.locator('#stats-section').isVisible(), true);
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

// A person's view of the portal, in headless Chromium (test/support/browser.ts).
test('in a browser: the portal lists endpoints, adds one, sends a test event and shows its deliveries', {
  skip: browserSkip,
}, async (t) => {
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
  assert.match(text, /#1 scheduled · success · HTTP 200/);
  assert.match(text, /#1 scheduled · failed · HTTP 500 · \d+ ms/);
  // Rows a person reads: the event type and the endpoint URL first; a failed attempt with retries left is pending.
  assert.match(text, /invoice\.paid → \S+\/browser-added · pending · 1 attempt\(s\)/);

  // Headers: edited as lines of "Name: value"; a credential comes back redacted.
  await page.click('#endpoints tbody tr:first-child button:text("Edit headers")');
  await page.fill('#endpoints tbody tr:first-child textarea', 'X-Tenant: acme\nAuthorization: Bearer browser-s3cret');
  await page.click('#endpoints tbody tr:first-child button:text("Save headers")');
  await page.waitForSelector('#endpoints .headers');
  const headersShown = (await page.locator('#endpoints .headers').first().textContent()) ?? '';
  assert.match(headersShown, /X-Tenant: acme/);
  assert.match(headersShown, /Authorization: <redacted>/);
  assert.doesNotMatch((await page.content()) ?? '', /browser-s3cret/);
  await page.click('#endpoints tbody tr:first-child button:text("Rate limit")');
  await page.fill('#endpoints tbody tr:first-child input[name=rate_limit]', '7');
  await page.click('#endpoints tbody tr:first-child button:text("Save rate limit")');
  await page.waitForSelector('#endpoints .rate-limit');
  assert.match(
    (await page.locator('#endpoints .rate-limit').first().textContent()) ?? '',
    /At most 7 requests a second/,
  );

  await page.click('#endpoints tbody tr:first-child button:text("Recover")');
  await page.click('#endpoints tbody tr:first-child button:text("Recover failed deliveries")');
  await page.waitForFunction(() =>
    /Recovery started \(task_/.test(document.querySelector('#endpoints .recover-form .note')?.textContent ?? ''),
  );

  await page.click('#endpoints tbody tr:first-child button:text("Disable")');
  await page.waitForSelector('#endpoints .status-disabled');
  await page.screenshot({ path: `${service.database.env.HERALD_DATA_DIR}/portal.png`, fullPage: true });
  if (process.env.HERALD_PORTAL_SCREENSHOT)
    await page.screenshot({ path: process.env.HERALD_PORTAL_SCREENSHOT, fullPage: true });
});

test("a customer sets an endpoint's content filter in the portal: tried first, saved, refused when out of bounds", async () => {
  const { app, endpoint, portal } = await appWithEndpoint('filtered');
  const other = await appWithEndpoint('filtered-other');
  const draft = { 'data.amount': { $gte: 100 } };
  const tried = async (payload: object, filter?: object | null) =>
    (await portal.post(`/api/endpoints/${endpoint.id}/filter-test`, { payload, event_type: 'invoice.paid', filter }))
      .body.matches;
  assert.equal(await tried({ amount: 5 }, draft), false, 'a draft is tried');
  assert.equal(await tried({ amount: 500 }, draft), true);
  assert.equal(await tried({ amount: 5 }), true, 'no filter saved yet: every message');
  const refused = await portal.post(`/api/endpoints/${endpoint.id}/filter-test`, {
    payload: {},
    filter: { $where: 'true' },
  });
  assert.equal(refused.status, 400);
  assert.match(refused.body.error.message, /\$where is not supported/);
  assert.equal((await portal.post(`/api/endpoints/${other.endpoint.id}/filter-test`, { payload: {} })).status, 404);

  const saved = await portal.patch(`/api/endpoints/${endpoint.id}`, { filter: draft });
  assert.equal(saved.status, 200, JSON.stringify(saved.body));
  assert.deepEqual(saved.body.filter, draft);
  assert.equal((await portal.patch(`/api/endpoints/${endpoint.id}`, { filter: { $where: 'x' } })).status, 400);
  assert.deepEqual(
    (await api.get(`/api/v1/endpoints/${endpoint.id}`)).body.filter,
    draft,
    'the refused one is not saved',
  );
  assert.equal(await tried({ amount: 5 }), false, 'the saved filter decides');
  // The fan-out obeys it: only the matching message makes a delivery.
  const small = await api.post('/api/v1/messages', {
    app_id: app.id,
    event_type: 'invoice.paid',
    payload: { amount: 5 },
  });
  const large = await api.post('/api/v1/messages', {
    app_id: app.id,
    event_type: 'invoice.paid',
    payload: { amount: 500 },
  });
  assert.deepEqual([small.body.delivery_ids.length, large.body.delivery_ids.length], [0, 1]);
  const added = await portal.post('/api/endpoints', { url: `${receiver.url}/filtered-added`, filter: { type: 'x' } });
  assert.equal(added.status, 201);
  assert.deepEqual(added.body.filter, { type: 'x' });
});

test('in a browser: the portal tries and saves a filter, and says so beside the form', {
  skip: browserSkip,
}, async (t) => {
  const { app, endpoint } = await appWithEndpoint('browser-filter');
  const browser = await launchBrowser(t);
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(error.message));
  await page.goto(service.url + app.portal_path);
  const row = page.locator(`#endpoints tbody tr[data-endpoint-id="${endpoint.id}"]`);
  await row.locator('button:text("Filter")').click();
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

test('in a browser: the portal edits an endpoint’s mutual TLS and OAuth2 settings, and saves them sealed', {
  skip: browserSkip,
}, async (t) => {
  const { app, endpoint } = await appWithEndpoint('security');
  const ca = makeCa('Portal receiver CA');
  const identity = ca.issue('portal-client', 'client', 10);
  const browser = await launchBrowser(t);
  const page = await browser.newPage();
  await page.goto(service.url + app.portal_path);
  await page.waitForSelector('#endpoints tbody tr');
  await page.click('#endpoints tbody tr:first-child button:text("Receiver security")');
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
  await page.click('#endpoints tbody tr:first-child button:text("Receiver security")');
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
  await page.click('#endpoints tbody tr:first-child button:text("Receiver security")');
  await form.locator('[name=token_url]').fill('http://10.0.0.1/token');
  await form.locator('button[type=submit]').click();
  await form.locator('.note.error').waitFor();
  assert.match((await form.locator('.note.error').textContent()) ?? '', /auth\.token_url/);
});

test("in a browser: the portal says an error beside the form that caused it, asks before rotating a secret, and shows a delivery's payload and answers", {
  skip: browserSkip,
}, async (t) => {
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
  await page.click(`#endpoints tbody tr[data-endpoint-id="${endpoint.id}"] button:text("Rotate secret")`);
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
