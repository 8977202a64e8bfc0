import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Locator } from 'playwright-core';
import { startTestService, type TestService } from '../support/service.js';
import { chooseAction, launchBrowser } from '../support/browser.js';
import { bootstrap, type Client } from '../support/client.js';
import { eventually, Receiver } from '../support/receiver.js';

// The transformation editor of the console's endpoint page and of the portal's endpoint rows, in headless
// Chromium: the draft runs through simulate as the person types and the request it makes (or the error)
// shows beside the code; saving changes what the receiver gets, and the delivery's answers show the
// request as sent. The routes themselves: test/contract/delivery/transformations.test.ts.

let service: TestService;
let receiver: Receiver;
let api: Client;
let testKey: string;

before(async () => {
  // Portal endpoints must reach public addresses unless the operator allows one: the receiver is loopback.
  service = await startTestService({ HERALD_SSRF_ALLOW: '127.0.0.1' });
  receiver = await new Receiver().start();
  const org = await bootstrap(service.url, 'Transformation pages');
  api = org.test;
  testKey = org.raw.test_key.key;
});
after(async () => {
  await service?.stop();
  await receiver?.stop();
});

const SLACK = `function handler(webhook) {
  webhook.url = webhook.url + "/slack";
  webhook.headers["x-shape"] = "slack";
  webhook.payload = { text: webhook.eventType + " #" + webhook.payload.data.n };
  return webhook;
}`;

/** The editor's result pane once it reads as `pattern`; its text. */
async function resultMatching(form: Locator, pattern: RegExp, what: string): Promise<string> {
  const result = form.locator('.transformation-result');
  return eventually(
    async () => {
      const text = (await result.textContent()) ?? '';
      return pattern.test(text) ? text : null;
    },
    10_000,
    what,
  );
}

/** Emits one message and waits for the receiver to get it; the request it got. */
async function emitted(appId: string, n: number) {
  const before = receiver.received.length;
  const message = await api.post('/api/v1/messages', { app_id: appId, event_type: 'invoice.paid', payload: { n } });
  assert.equal(message.status, 201);
  await receiver.waitFor(before + 1);
  return { message: message.body, received: receiver.received[before]! };
}

test('in a browser: the console simulates a transformation as it is typed, saves it, and shows the request it sent', async (t) => {
  const app = (await api.post('/api/v1/applications', { name: 'console-transform' })).body;
  const url = `${receiver.url}/console-hook`;
  const endpoint = (await api.post('/api/v1/endpoints', { app_id: app.id, url, event_types: ['invoice.paid'] })).body;
  receiver.respond = () => ({ status: 200, body: 'ok' });

  const browser = await launchBrowser(t);
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(error.message));
  const simulated: string[] = [];
  page.on('request', (request) => {
    if (request.url().endsWith('/transformation/simulate')) simulated.push(request.postData() ?? '');
  });
  await page.goto(`${service.url}/console#/endpoints`);
  await page.fill('#sign-in input[name=key]', testKey);
  await page.click('#sign-in button[type=submit]');
  await chooseAction(page.locator(`#endpoints tbody tr[data-endpoint-id="${endpoint.id}"]`), 'Open');
  await page.click('#endpoint-tabs button[data-tab="transformation"]');
  const form = page.locator('#endpoint-transformation form.transformation-form');
  await form.waitFor();
  assert.equal(await page.locator('#endpoint-details .transformation-value').textContent(), 'none');

  // The starter handler runs at once: the request Herald would make, unchanged, for the sample payload.
  await resultMatching(form, new RegExp(`^POST ${url}\\n`), 'the starter simulated');

  // Typed code runs once typing pauses; the result beside it is the reshaped request.
  await form.locator('textarea[name=payload]').fill('{"n": 7}');
  await form.locator('textarea[name=code]').fill(SLACK);
  const shaped = await resultMatching(form, /"text": "invoice\.paid #7"/, 'the draft simulated');
  assert.match(shaped, new RegExp(`^POST ${url}/slack\\nx-shape: slack\\n`));
  assert.match((await form.locator('.transformation-result').getAttribute('class')) ?? '', /^transformation-result$/);
  const lastSimulated = JSON.parse(simulated.at(-1)!);
  assert.equal(lastSimulated.code, SLACK, 'the draft as typed was simulated');
  assert.deepEqual(lastSimulated.payload, { n: 7 });

  // Broken code, a throw and a spinning loop each say what went wrong, marked as an error.
  for (const [code, error] of [
    ['function handler(webhook) { return webhook;', /does not compile|SyntaxError/],
    [
      'function handler(webhook) { throw new Error("no shape for " + webhook.eventType); }',
      /threw .*no shape for invoice\.paid/,
    ],
    ['function handler(webhook) { for (;;) {} }', /deadline of \d+ ms exceeded/],
  ] as const) {
    await form.locator('textarea[name=code]').fill(code);
    await resultMatching(form, error, `the error of ${code}`);
    assert.match((await form.locator('.transformation-result').getAttribute('class')) ?? '', /error/);
  }
  // Nothing is saved by typing.
  assert.equal((await api.get(`/api/v1/endpoints/${endpoint.id}`)).body.transformation, null);

  // Code the API refuses is not saved, and the form says why.
  const answer = form.locator('.transformation-answer');
  await form.locator('textarea[name=code]').fill('var handler = 1;');
  await form.locator('button:text("Save transformation")').click();
  await eventually(async () => /does not compile/.test((await answer.textContent()) ?? ''), 5_000, 'refused');
  assert.equal((await api.get(`/api/v1/endpoints/${endpoint.id}`)).body.transformation, null);

  await form.locator('textarea[name=code]').fill(SLACK);
  await form.locator('button:text("Save transformation")').click();
  await eventually(async () => /^Transformation saved/.test((await answer.textContent()) ?? ''), 5_000, 'saved');
  const saved = (await api.get(`/api/v1/endpoints/${endpoint.id}`)).body.transformation;
  assert.deepEqual([saved.code, saved.enabled], [SLACK, true]);
  assert.match((await page.locator('#endpoint-details .transformation-value').textContent()) ?? '', /^on, changed /);

  // The receiver gets the reshaped request; the delivery's answers show where it went and what it carried.
  const { received } = await emitted(app.id, 42);
  assert.equal(received.path, '/console-hook/slack');
  assert.deepEqual(JSON.parse(received.body), { text: 'invoice.paid #42' });
  const [sent] = (await api.get(`/api/v1/deliveries?endpoint_id=${endpoint.id}&limit=1`)).body.data;
  await page.goto(`${service.url}/console#/deliveries/${sent.id}`);
  const delivery = page.locator('#delivery-detail .delivery').first();
  await delivery.waitFor();
  await delivery.locator('button:text("Show payload and answers")').click();
  const made = delivery.locator('.answer .made-request');
  await made.waitFor();
  assert.equal(await made.textContent(), `Sent as transformed: POST ${url}/slack`);
  assert.deepEqual(JSON.parse((await delivery.locator('.answer .made-request-body').textContent()) ?? ''), {
    text: 'invoice.paid #42',
  });

  // Turned off: saved, and the next attempt goes unchanged.
  await page.goto(`${service.url}/console#/endpoints/${endpoint.id}?tab=transformation`);
  await page.locator('#endpoint-transformation form.transformation-form').waitFor();
  await page.locator('#endpoint-transformation input[name=enabled]').uncheck();
  await page.locator('#endpoint-transformation button:text("Save transformation")').click();
  await eventually(
    async () => /turned off/.test((await page.locator('.transformation-answer').textContent()) ?? ''),
    5_000,
    'turned off',
  );
  const plain = await emitted(app.id, 43);
  assert.equal(plain.received.path, '/console-hook');
  assert.deepEqual(JSON.parse(plain.received.body).data, { n: 43 });
  assert.deepEqual(problems, []);
});

test('in a browser: the portal edits a transformation beside its simulated request, and shows the request sent', async (t) => {
  const app = (await api.post('/api/v1/applications', { name: 'portal-transform' })).body;
  const url = `${receiver.url}/portal-hook`;
  const endpoint = (await api.post('/api/v1/endpoints', { app_id: app.id, url })).body;
  const other = (await api.post('/api/v1/applications', { name: 'portal-transform-other' })).body;
  const othersEndpoint = (await api.post('/api/v1/endpoints', { app_id: other.id, url })).body;
  receiver.respond = () => ({ status: 200, body: 'ok' });

  const browser = await launchBrowser(t);
  const page = await browser.newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(error.message));
  await page.goto(service.url + app.portal_path);
  const row = page.locator(`#endpoints tbody tr[data-endpoint-id="${endpoint.id}"]`);
  await row.waitFor();
  assert.equal(await row.locator('.transformation').textContent(), '', 'no transformation: nothing said');
  await chooseAction(row, 'Transformation');
  const form = row.locator('form.transformation-form');
  await form.waitFor();
  await resultMatching(form, new RegExp(`^POST ${url}\\n`), 'the starter simulated');

  // A handler that cancels some payloads: the preview says no request would be made.
  const CANCEL_SMALL = `function handler(webhook) {
  if (webhook.payload.data.n < 10) webhook.cancel = true;
  webhook.method = "PUT";
  return webhook;
}`;
  await form.locator('textarea[name=code]').fill(CANCEL_SMALL);
  await form.locator('textarea[name=payload]').fill('{"n": 3}');
  await resultMatching(form, /^Cancelled: no request is made/, 'a cancel previewed');
  await form.locator('textarea[name=payload]').fill('{"n": 30}');
  await resultMatching(form, new RegExp(`^PUT ${url}\\n`), 'a PUT previewed');
  await form.locator('textarea[name=payload]').fill('{"n": ');
  await resultMatching(form, /sample payload is not valid JSON/, 'a bad sample said');

  await form.locator('button:text("Save transformation")').click();
  await eventually(
    async () => /^Transformation saved/.test((await form.locator('.transformation-answer').textContent()) ?? ''),
    5_000,
    'saved',
  );
  assert.match((await row.locator('.transformation').textContent()) ?? '', /^Transformation on, changed /);
  assert.equal((await api.get(`/api/v1/endpoints/${endpoint.id}`)).body.transformation.code, CANCEL_SMALL);

  // A small payload is cancelled (no request); a large one goes as PUT, and the portal shows it so.
  const beforeSmall = receiver.received.length;
  const small = (await api.post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid', payload: { n: 3 } }))
    .body;
  const { message: large, received } = await emitted(app.id, 30);
  assert.equal(received.method, 'PUT');
  assert.equal(
    receiver.received.slice(beforeSmall).filter((r) => JSON.parse(r.body).data?.n === 3).length,
    0,
    'the cancelled payload was never sent',
  );
  const cancelled = await eventually(
    async () => {
      const reply = await api.get(`/api/v1/messages/${small.id}/deliveries`);
      return reply.body.data[0]?.status === 'success' ? reply.body.data[0] : null;
    },
    10_000,
    'the cancelled delivery ended',
  );
  assert.equal((await api.get(`/api/v1/deliveries/${cancelled.id}`)).body.attempts[0].status, 'cancelled');

  await page.reload();
  await page.locator(`#messages tbody tr[data-message-id="${large.id}"] button:text("Deliveries")`).click();
  const delivery = page.locator('#deliveries .delivery').first();
  await delivery.waitFor();
  await delivery.locator('button:text("Show payload and answers")').click();
  const made = delivery.locator('.answer .made-request');
  await made.waitFor();
  assert.equal(await made.textContent(), `Sent as transformed: PUT ${url}`);

  // Another application's endpoint is not this link's to simulate or change.
  const portalApi = `${service.url}${app.portal_path}/api/endpoints/${othersEndpoint.id}`;
  const foreign = await fetch(`${portalApi}/transformation/simulate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ code: SLACK, payload: {} }),
  });
  assert.equal(foreign.status, 404);
  const foreignPatch = await fetch(portalApi, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ transformation: { code: SLACK } }),
  });
  assert.equal(foreignPatch.status, 404);
  assert.equal((await api.get(`/api/v1/endpoints/${othersEndpoint.id}`)).body.transformation, null);
  assert.deepEqual(problems, []);
});
