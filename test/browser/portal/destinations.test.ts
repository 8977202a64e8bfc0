import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chooseAction, launchBrowser } from '../../support/browser.js';
import { eventually } from '../../support/receiver.js';
import { api, service, setUpPortalWorld } from '../../support/portal-world.js';
import { rabbitConsumer, redisConsumer, verified } from '../../support/brokers.js';

// The console and the portal create and edit destinations with a form of each type's fields, in headless
// Chromium: a type select that shows the type's config fields, and for a destination an editor of its URL
// and config, whose stored password reads "<redacted>" and stays when saved as shown. What is made
// delivers to the real broker. (The portal's world lets portals reach 127.0.0.1.)

setUpPortalWorld();

async function signedIn(t: Parameters<typeof launchBrowser>[0]) {
  const browser = await launchBrowser(t);
  const page = await (await browser.newContext()).newPage();
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  return { page, problems };
}

test('in a browser: the console creates a RabbitMQ destination and edits its routing key; both deliver', async (t) => {
  const first = await rabbitConsumer(t);
  const second = await rabbitConsumer(t);
  const app = (await api.post('/api/v1/applications', { name: 'console-destinations' })).body;
  const key = (await api.post('/api/v1/api-keys', { name: 'console' })).body;
  const { page, problems } = await signedIn(t);
  await page.goto(`${service.url}/console`);
  await page.fill('#sign-in input[name=key]', key.key);
  await page.click('#sign-in button[type=submit]');
  await page.click('#tabs button[data-view="endpoints"]');
  await page.selectOption('#add-endpoint select[name=app_id]', app.id);
  await page.selectOption('#add-endpoint select[name=type]', 'rabbitmq');
  // The type's own fields, with their defaults.
  assert.equal(await page.inputValue('#add-endpoint [name="config.routing_key"]'), '{event_type}');
  await page.fill('#add-endpoint input[name=url]', first.url);
  await page.fill('#add-endpoint [name="config.routing_key"]', first.queue);
  await page.click('#add-endpoint button[type=submit]');
  await page.waitForFunction(() =>
    /signing secret/.test(document.querySelector('#add-endpoint .note')?.textContent ?? ''),
  );
  const [endpoint] = (await api.get(`/api/v1/endpoints?app_id=${app.id}`)).body.data;
  assert.equal(endpoint.type, 'rabbitmq');
  assert.deepEqual(endpoint.config, { exchange: '', routing_key: first.queue });
  const secret = /whsec_\S+/.exec((await page.textContent('#add-endpoint .note')) ?? '')![0];
  await api.post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid', payload: { n: 1 } });
  verified((await first.waitFor(1))[0]!, secret);

  // Edited as shown: the password stays "<redacted>" in the form and stored behind it.
  await page.goto(`${service.url}/console#/endpoints/${endpoint.id}`);
  await page.waitForFunction((id) => document.querySelector('#endpoint-id')?.textContent === id, endpoint.id);
  const form = page.locator('#endpoint-destination-settings .destination-settings-form');
  await page.click('#endpoint-tabs button[data-tab="settings"]');
  assert.equal(await form.locator('[name=url]').inputValue(), 'amqp://guest:<redacted>@127.0.0.1:5672');
  await form.locator('[name="config.routing_key"]').fill(second.queue);
  await form.locator('button[type=submit]').click();
  await eventually(
    async () => (await api.get(`/api/v1/endpoints/${endpoint.id}`)).body.config.routing_key === second.queue,
    10_000,
    'the routing key saved',
  );
  await api.post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid', payload: { n: 2 } });
  verified((await second.waitFor(1))[0]!, secret);
  assert.deepEqual(problems, []);
});

test('in a browser: the portal adds a Redis destination with its own stream and edits it', async (t) => {
  const stream = await redisConsumer(t);
  const app = (await api.post('/api/v1/applications', { name: 'portal-destinations' })).body;
  const { page, problems } = await signedIn(t);
  await page.goto(service.url + app.portal_path);
  await page.selectOption('#add-endpoint select[name=type]', 'redis');
  assert.equal(await page.inputValue('#add-endpoint [name="config.stream"]'), 'webhooks');
  await page.fill('#add-endpoint input[name=url]', stream.url);
  await page.fill('#add-endpoint [name="config.stream"]', `${stream.stream}-old`);
  await page.click('#add-endpoint button[type=submit]');
  await page.waitForSelector('#add-endpoint .note');
  const note = (await page.textContent('#add-endpoint .note')) ?? '';
  const secret = /whsec_\S+/.exec(note)?.[0];
  assert.ok(secret, note);
  await page.waitForSelector('#endpoints tbody tr .menu-items button:text("Destination settings")', {
    state: 'attached',
  });
  await chooseAction(page.locator('#endpoints tbody tr:first-child'), 'Destination settings');
  const form = page.locator('#endpoints tbody tr:first-child .destination-settings-form');
  await form.locator('[name="config.stream"]').fill(stream.stream);
  await form.locator('[name="config.maxlen"]').fill('500');
  await form.locator('button[type=submit]').click();
  const [endpoint] = (await api.get(`/api/v1/endpoints?app_id=${app.id}`)).body.data;
  await eventually(
    async () => (await api.get(`/api/v1/endpoints/${endpoint.id}`)).body.config.maxlen === 500,
    10_000,
    'the stream saved',
  );
  await api.post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid', payload: { n: 1 } });
  verified((await stream.waitFor(1))[0]!, secret);
  assert.deepEqual(problems, []);
});
