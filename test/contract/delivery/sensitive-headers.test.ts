import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Svix } from 'svix';
import { setup, startReceiver } from '../../support/delivery.js';
import { assertError } from '../../support/api.js';

// Sensitive headers (issue 42, finding 8): an endpoint's header whose name looks like a credential, or that
// the endpoint marks sensitive (`sensitive_headers`), is sent as set but read back as "<redacted>" on the
// endpoint, on the Svix headers route and in every attempt's request_headers; sent back as "<redacted>" it
// keeps its value. A receiver's Set-Cookie and other credentials are kept redacted in response_headers.

test('X-Password reaches the receiver, and reads, the Svix headers route and attempts show it redacted', async (t) => {
  const s = await setup(t);
  const receiver = await startReceiver(t, () => ({
    status: 200,
    headers: { 'Set-Cookie': 's=1', 'X-Auth-Token': 'rcv-t0ken', 'X-Receiver': 'r1' },
    body: 'ok',
  }));
  const svix = new Svix(s.api.key!, { serverUrl: s.service.url });
  await svix.eventType.create({ name: 'order.paid', description: 'Paid' });
  await svix.application.create({ name: 'Store', uid: 'store' });
  const created = await svix.endpoint.create('store', { url: `${receiver.url}/hook`, uid: 'main' });
  await svix.endpoint.updateHeaders('store', 'main', { headers: { 'X-Password': 'hunter2', 'X-Tenant': 'acme' } });

  // The Svix headers route names it sensitive and does not show it.
  const shown = await svix.endpoint.getHeaders('store', 'main');
  assert.deepEqual(shown, { headers: { 'X-Tenant': 'acme' }, sensitive: ['X-Password'] });
  // The native read shows it redacted and names it.
  const read = await s.api.get(`/api/v1/endpoints/${created.id}`);
  assert.deepEqual(read.body.headers, { 'X-Password': '<redacted>', 'X-Tenant': 'acme' });
  assert.deepEqual(read.body.sensitive_headers, ['X-Password']);

  const message = await svix.message.create('store', { eventType: 'order.paid', payload: { n: 1 } });
  await receiver.waitFor(1);
  assert.equal(receiver.received[0]!.headers['x-password'], 'hunter2');
  const deliveries = await s.api.get(`/api/v1/deliveries?message_id=${message.id}`);
  const delivery = await s.until(deliveries.body.data[0].id, (d) => d.attempts.length === 1, 'the attempt recorded');
  const attempt = delivery.attempts[0]!;
  assert.equal(attempt.request_headers?.['x-password'], '<redacted>');
  assert.equal(attempt.request_headers?.['x-tenant'], 'acme');
  // The receiver's cookie and token are kept redacted; its other headers as they came.
  assert.equal(attempt.response_headers?.['set-cookie'], '<redacted>');
  assert.equal(attempt.response_headers?.['x-auth-token'], '<redacted>');
  assert.equal(attempt.response_headers?.['x-receiver'], 'r1');
  const [row] = await s.service.store.ctx.db
    .selectFrom('attempt_log')
    .selectAll()
    .where('delivery_id', '=', delivery.id)
    .execute();
  for (const secret of ['hunter2', 's=1', 'rcv-t0ken']) assert.ok(!JSON.stringify(row).includes(secret), secret);

  // Written back as read (the Svix PATCH and the native update), the value stays.
  await svix.endpoint.patchHeaders('store', 'main', { headers: { 'X-Tenant': 'globex' } });
  const back = await s.api.patch(`/api/v1/endpoints/${created.id}`, {
    headers: { 'X-Password': '<redacted>', 'X-Tenant': 'initech' },
  });
  assert.equal(back.status, 200);
  assert.deepEqual(back.body.headers, { 'X-Password': '<redacted>', 'X-Tenant': 'initech' });
  await svix.message.create('store', { eventType: 'order.paid', payload: { n: 2 } });
  await receiver.waitFor(2);
  assert.equal(receiver.received[1]!.headers['x-password'], 'hunter2');
  assert.equal(receiver.received[1]!.headers['x-tenant'], 'initech');
});

test('a header marked sensitive is redacted everywhere, keeps its value when sent back, and keeps its mark', async (t) => {
  const s = await setup(t);
  const receiver = await startReceiver(t);
  const created = await s.api.post('/api/v1/endpoints', {
    app_id: s.appId,
    url: `${receiver.url}/hook`,
    headers: { 'X-Customer': 'c-42', 'X-Tenant': 'acme', Authorization: 'Bearer b' },
    sensitive_headers: ['x-customer'],
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.deepEqual(created.body.headers, {
    'X-Customer': '<redacted>',
    'X-Tenant': 'acme',
    Authorization: '<redacted>',
  });
  assert.deepEqual(created.body.sensitive_headers, ['X-Customer', 'Authorization']);
  const id = created.body.id;

  const { deliveryIds } = await s.emit({ n: 1 });
  const delivery = await s.until(deliveryIds[0]!, (d) => d.attempts.length === 1, 'the attempt recorded');
  assert.equal(delivery.attempts[0]!.request_headers?.['x-customer'], '<redacted>');
  assert.equal(receiver.received[0]!.headers['x-customer'], 'c-42');

  // The Svix headers route names it; a Svix PUT that sends it keeps its mark.
  const svixHeaders = async () => (await s.api.get(`/api/v1/app/${s.appId}/endpoint/${id}/headers`)).body;
  assert.deepEqual(await svixHeaders(), {
    headers: { 'X-Tenant': 'acme' },
    sensitive: ['X-Customer', 'Authorization'],
  });
  const put = await s.api.request('PUT', `/api/v1/app/${s.appId}/endpoint/${id}/headers`, {
    headers: { 'X-Customer': 'c-43', 'X-Tenant': 'acme' },
  });
  assert.equal(put.status, 204, JSON.stringify(put.body));
  assert.deepEqual(await svixHeaders(), { headers: { 'X-Tenant': 'acme' }, sensitive: ['X-Customer'] });

  // Sent back as read, the value stays; an update of the marks alone replaces them.
  const back = await s.api.patch(`/api/v1/endpoints/${id}`, {
    headers: { 'X-Customer': '<redacted>', 'X-Tenant': 'x' },
  });
  assert.deepEqual(back.body.headers, { 'X-Customer': '<redacted>', 'X-Tenant': 'x' });
  const remarked = await s.api.patch(`/api/v1/endpoints/${id}`, { sensitive_headers: ['X-Tenant'] });
  assert.deepEqual(remarked.body.headers, { 'X-Customer': 'c-43', 'X-Tenant': '<redacted>' });
  assert.deepEqual(remarked.body.sensitive_headers, ['X-Tenant']);
  await s.emit({ n: 2 });
  await receiver.waitFor(2);
  assert.equal(receiver.received[1]!.headers['x-customer'], 'c-43');
  assert.equal(receiver.received[1]!.headers['x-tenant'], 'x');

  assertError(
    await s.api.patch(`/api/v1/endpoints/${id}`, { sensitive_headers: ['X Bad'] }),
    400,
    'invalid_request',
    /sensitive_headers: "X Bad" is not a valid header name/,
  );
});
