import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, startReceiver } from '../../support/delivery.js';
import { assertError, assertSvixError } from '../../support/api.js';
import type { Reply } from '../../support/client.js';

// A date-time the request schemas take (`format: date-time`) but JavaScript's Date cannot read: a leap
// second. Every route that takes a time refuses it naming the field (400 on the native API, Svix's 422
// with `loc` on the Svix surface) instead of reading it as NaN, which PostgreSQL refused with a 500 and a
// replay read as "nothing to send". Real service and receiver, on the store under test.

const LEAP = '2026-06-30T23:59:60Z';
const leap = encodeURIComponent(LEAP);
const OK = '2026-01-01T00:00:00.000Z';

/** The native 400 naming `field`. */
const refusedNatively = (reply: Reply, field: string) =>
  assertError(reply, 400, 'invalid_request', new RegExp(`^${field} must be an RFC 3339 date-time`));

/** Svix's 422 validation error naming `field` in `part`. */
function refusedSvix(reply: Reply, part: 'query' | 'body', field: string): void {
  assertSvixError(reply, 422, 'validation');
  assert.deepEqual(reply.body.detail[0].loc, [part, field]);
  assert.match(reply.body.detail[0].msg, new RegExp(`^${field} must be an RFC 3339 date-time`));
}

test('a leap second is refused naming the field by every route that takes a time, on both surfaces', async (t) => {
  const s = await setup(t);
  const message = await s.emit({ n: 1 });
  const endpoint = await s.endpoint('http://127.0.0.1:9/hook');
  const { api } = s;

  // Native: the lists' since/until, the stats windows, recovery.
  for (const list of ['/api/v1/messages', '/api/v1/deliveries'])
    for (const field of ['since', 'until']) refusedNatively(await api.get(`${list}?${field}=${leap}`), field);
  for (const stats of [`/api/v1/endpoints/${endpoint.id}/stats`, `/api/v1/applications/${s.appId}/stats`])
    for (const field of ['since', 'until']) refusedNatively(await api.get(`${stats}?${field}=${leap}`), field);
  refusedNatively(await api.post(`/api/v1/endpoints/${endpoint.id}/recover`, { since: LEAP }), 'since');
  refusedNatively(await api.post(`/api/v1/endpoints/${endpoint.id}/recover`, { since: OK, until: LEAP }), 'until');

  // Svix: the endpoint's stats, the message and attempt lists' before/after, replay-missing and recover.
  const app = `/api/v1/app/${s.appId}`;
  const ep = `${app}/endpoint/${endpoint.id}`;
  for (const field of ['since', 'until']) refusedSvix(await api.get(`${ep}/stats?${field}=${leap}`), 'query', field);
  for (const list of [`${app}/msg`, `${app}/attempt/endpoint/${endpoint.id}`, `${app}/attempt/msg/${message.id}`])
    for (const field of ['before', 'after']) refusedSvix(await api.get(`${list}?${field}=${leap}`), 'query', field);
  refusedSvix(await api.post(`${ep}/recover`, { since: LEAP }), 'body', 'since');
});

test('replay-missing from a leap second is 422 naming the field and queues nothing', async (t) => {
  const s = await setup(t);
  const receiver = await startReceiver(t);
  // The endpoint is made after the message, so it has no delivery of it: a replay would send it.
  const message = await s.emit({ n: 1 });
  const endpoint = await s.endpoint(`${receiver.url}/hook`);
  const { api } = s;
  const ep = `/api/v1/app/${s.appId}/endpoint/${endpoint.id}`;
  refusedSvix(await api.post(`${ep}/replay-missing`, { since: LEAP }), 'body', 'since');
  refusedSvix(await api.post(`${ep}/replay-missing`, { since: OK, until: LEAP }), 'body', 'until');

  // Nothing was queued: the message the endpoint never got is still not sent to it.
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.equal(receiver.received.length, 0);
  assert.deepEqual((await api.get(`/api/v1/deliveries?endpoint_id=${endpoint.id}`)).body.data, []);
  // The same replay with a time Date reads sends it.
  const replay = await api.post(`${ep}/replay-missing`, { since: OK });
  assert.equal(replay.status, 202, JSON.stringify(replay.body));
  await receiver.waitFor(1);
  assert.equal(receiver.received[0]!.headers['webhook-id'], message.id);
});
