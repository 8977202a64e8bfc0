import assert from 'node:assert/strict';
import type { Client, Reply } from './client.js';

// Small helpers shared by the black-box API tests. They only speak HTTP, like any client would.

/** Asserts the error envelope: status, code, a message, and a request_id that matches the x-request-id header. */
export function assertError(reply: Reply, status: number, code: string, message?: RegExp): void {
  assert.equal(reply.status, status, `expected ${status} ${code}, got ${reply.status} ${JSON.stringify(reply.body)}`);
  assert.equal(typeof reply.body, 'object', `error body is not JSON: ${String(reply.body)}`);
  assert.deepEqual(Object.keys(reply.body), ['error']);
  const error = reply.body.error;
  assert.equal(error.code, code, `code of ${JSON.stringify(reply.body)}`);
  assert.equal(typeof error.message, 'string');
  assert.ok(error.message.length > 0, 'error message is empty');
  if (message) assert.match(error.message, message);
  assert.match(error.request_id, /^req_/);
  assert.equal(reply.headers.get('x-request-id'), error.request_id);
}

export async function createApp(client: Client, body: Record<string, unknown> = { name: 'Acme' }): Promise<any> {
  const reply = await client.post('/api/v1/applications', body);
  assert.equal(reply.status, 201, JSON.stringify(reply.body));
  return reply.body;
}

export async function createEndpoint(client: Client, appId: string, extra: Record<string, unknown> = {}): Promise<any> {
  const reply = await client.post('/api/v1/endpoints', { app_id: appId, url: 'https://example.com/hook', ...extra });
  assert.equal(reply.status, 201, JSON.stringify(reply.body));
  return reply.body;
}

export async function emit(
  client: Client,
  appId: string,
  eventType = 'invoice.paid',
  payload: object = { n: 1 },
  headers?: Record<string, string>,
): Promise<any> {
  const reply = await client.post('/api/v1/messages', { app_id: appId, event_type: eventType, payload }, headers);
  assert.equal(reply.status, 201, JSON.stringify(reply.body));
  return reply.body;
}

/** Walks every page of a list with the given page size; fails on a runaway cursor. */
export async function listAll(client: Client, path: string, limit: number): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 1000; pages++) {
    const separator = path.includes('?') ? '&' : '?';
    const reply: Reply = await client.get(
      `${path}${separator}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.equal(reply.body.object, 'list');
    assert.ok(reply.body.data.length <= limit, `page of ${reply.body.data.length} items for limit ${limit}`);
    items.push(...reply.body.data);
    if (!reply.body.has_more) {
      assert.equal(reply.body.next_cursor, null);
      return items;
    }
    assert.equal(typeof reply.body.next_cursor, 'string');
    cursor = reply.body.next_cursor;
  }
  throw new Error(`more than 1000 pages from ${path}`);
}

/** Ids (or names) of everything a list returns, walking all pages. */
export async function idsOf(client: Client, path: string, field = 'id'): Promise<string[]> {
  return (await listAll(client, path, 50)).map((item) => item[field]);
}

/** Inputs no route should answer with a 5xx: wrong types, odd strings, NUL and unpaired surrogates, operators. */
export const ODD_VALUES: unknown[] = [
  null,
  true,
  -1,
  1e308,
  '',
  'x'.repeat(5000),
  'a\u0000b',
  '\ud800',
  '../../etc/passwd',
  [],
  ['\u0000'],
  { $gt: '' },
];

/** Whole bodies (sent as raw text) that are not what a route expects. */
export const ODD_BODIES: string[] = [
  '',
  'null',
  '[]',
  '{',
  '{"__proto__":{"x":1}}',
  '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]',
];

/** Bodies that each put one odd value in one of a route's fields. */
export function oddBodiesFor(fields: string[]): unknown[] {
  return fields.flatMap((field) => ODD_VALUES.map((value) => ({ [field]: value })));
}

/** Every native route of /api/v1 behind an API key, as OpenAPI writes paths. */
export const NATIVE_ROUTES: [method: string, path: string][] = [
  ['GET', '/api/v1/messages'],
  ['POST', '/api/v1/messages'],
  ['POST', '/api/v1/messages/send-test'],
  ['GET', '/api/v1/messages/{id}'],
  ['GET', '/api/v1/messages/{id}/payload'],
  ['POST', '/api/v1/messages/{id}/replay'],
  ['GET', '/api/v1/messages/{id}/deliveries'],
  ['GET', '/api/v1/applications'],
  ['POST', '/api/v1/applications'],
  ['GET', '/api/v1/applications/{id}'],
  ['PATCH', '/api/v1/applications/{id}'],
  ['DELETE', '/api/v1/applications/{id}'],
  ['POST', '/api/v1/applications/{id}/rotate-portal-path'],
  ['GET', '/api/v1/applications/{id}/stats'],
  ['GET', '/api/v1/endpoints'],
  ['POST', '/api/v1/endpoints'],
  ['GET', '/api/v1/endpoints/{id}'],
  ['PATCH', '/api/v1/endpoints/{id}'],
  ['DELETE', '/api/v1/endpoints/{id}'],
  ['POST', '/api/v1/endpoints/{id}/rotate-secret'],
  ['POST', '/api/v1/endpoints/{id}/filter-test'],
  ['POST', '/api/v1/endpoints/{id}/transformation/simulate'],
  ['POST', '/api/v1/endpoints/{id}/recover'],
  ['POST', '/api/v1/endpoints/{id}/bulk-replay'],
  ['GET', '/api/v1/endpoints/{id}/stats'],
  ['GET', '/api/v1/background-tasks/{id}'],
  ['POST', '/api/v1/background-tasks/{id}/cancel'],
  ['GET', '/api/v1/operational-endpoints'],
  ['POST', '/api/v1/operational-endpoints'],
  ['PATCH', '/api/v1/operational-endpoints/{id}'],
  ['DELETE', '/api/v1/operational-endpoints/{id}'],
  ['POST', '/api/v1/operational-endpoints/{id}/rotate-secret'],
  ['GET', '/api/v1/deliveries'],
  ['GET', '/api/v1/deliveries/{id}'],
  ['POST', '/api/v1/deliveries/{id}/retry'],
  ['GET', '/api/v1/event-types'],
  ['POST', '/api/v1/event-types'],
  ['GET', '/api/v1/event-types/{name}'],
  ['PATCH', '/api/v1/event-types/{name}'],
  ['GET', '/api/v1/api-keys'],
  ['POST', '/api/v1/api-keys'],
  ['DELETE', '/api/v1/api-keys/{id}'],
  ['GET', '/api/v1/audit-log'],
];

/** The Svix-compatible surface's routes behind an API key (src/api/svix/); their errors are Svix's. */
export const SVIX_ROUTES: [method: string, path: string][] = [
  ['GET', '/api/v1/app'],
  ['POST', '/api/v1/app'],
  ['GET', '/api/v1/app/{app_id}'],
  ['PUT', '/api/v1/app/{app_id}'],
  ['PATCH', '/api/v1/app/{app_id}'],
  ['DELETE', '/api/v1/app/{app_id}'],
  ['GET', '/api/v1/app/{app_id}/attempt/endpoint/{endpoint_id}'],
  ['GET', '/api/v1/app/{app_id}/attempt/msg/{msg_id}'],
  ['GET', '/api/v1/app/{app_id}/msg/{msg_id}/attempt/{attempt_id}'],
  ['GET', '/api/v1/app/{app_id}/endpoint/{endpoint_id}/msg'],
  ['GET', '/api/v1/app/{app_id}/msg/{msg_id}/endpoint'],
  ['POST', '/api/v1/app/{app_id}/msg/{msg_id}/endpoint/{endpoint_id}/resend'],
  ['GET', '/api/v1/background-task'],
  ['GET', '/api/v1/background-task/{task_id}'],
  ['GET', '/api/v1/app/{app_id}/endpoint'],
  ['POST', '/api/v1/app/{app_id}/endpoint'],
  ['GET', '/api/v1/app/{app_id}/endpoint/{endpoint_id}'],
  ['PUT', '/api/v1/app/{app_id}/endpoint/{endpoint_id}'],
  ['PATCH', '/api/v1/app/{app_id}/endpoint/{endpoint_id}'],
  ['DELETE', '/api/v1/app/{app_id}/endpoint/{endpoint_id}'],
  ['GET', '/api/v1/app/{app_id}/endpoint/{endpoint_id}/stats'],
  ['GET', '/api/v1/app/{app_id}/endpoint/{endpoint_id}/transformation'],
  ['PATCH', '/api/v1/app/{app_id}/endpoint/{endpoint_id}/transformation'],
  ['POST', '/api/v1/app/{app_id}/endpoint/{endpoint_id}/replay-missing'],
  ['POST', '/api/v1/app/{app_id}/endpoint/{endpoint_id}/bulk-replay'],
  ['POST', '/api/v1/app/{app_id}/endpoint/{endpoint_id}/send-example'],
  ['POST', '/api/v1/app/{app_id}/endpoint/{endpoint_id}/recover'],
  ['GET', '/api/v1/app/{app_id}/endpoint/{endpoint_id}/secret'],
  ['GET', '/api/v1/operational-webhook/endpoint/{endpoint_id}/secret'],
  ['POST', '/api/v1/app/{app_id}/endpoint/{endpoint_id}/secret/rotate'],
  ['POST', '/api/v1/operational-webhook/endpoint/{endpoint_id}/secret/rotate'],
  ['GET', '/api/v1/app/{app_id}/endpoint/{endpoint_id}/headers'],
  ['GET', '/api/v1/operational-webhook/endpoint/{endpoint_id}/headers'],
  ['PUT', '/api/v1/app/{app_id}/endpoint/{endpoint_id}/headers'],
  ['PUT', '/api/v1/operational-webhook/endpoint/{endpoint_id}/headers'],
  ['PATCH', '/api/v1/app/{app_id}/endpoint/{endpoint_id}/headers'],
  ['GET', '/api/v1/event-type'],
  ['POST', '/api/v1/event-type'],
  ['GET', '/api/v1/event-type/{event_type_name}'],
  ['PUT', '/api/v1/event-type/{event_type_name}'],
  ['PATCH', '/api/v1/event-type/{event_type_name}'],
  ['DELETE', '/api/v1/event-type/{event_type_name}'],
  ['GET', '/api/v1/app/{app_id}/msg'],
  ['POST', '/api/v1/app/{app_id}/msg'],
  ['GET', '/api/v1/app/{app_id}/msg/{msg_id}'],
  ['DELETE', '/api/v1/app/{app_id}/msg/{msg_id}/content'],
  ['GET', '/api/v1/operational-webhook/endpoint'],
  ['POST', '/api/v1/operational-webhook/endpoint'],
  ['GET', '/api/v1/operational-webhook/endpoint/{endpoint_id}'],
  ['PUT', '/api/v1/operational-webhook/endpoint/{endpoint_id}'],
  ['DELETE', '/api/v1/operational-webhook/endpoint/{endpoint_id}'],
  ['POST', '/api/v1/auth/app-portal-access/{app_id}'],
];

/** Every route of /api/v1 behind an API key. The openapi test checks this list is complete. */
export const AUTHENTICATED_ROUTES = [...NATIVE_ROUTES, ...SVIX_ROUTES];

/** Asserts an error in Svix's shape: {code, detail}, or for 422 {detail: [{loc, msg, type}]}. */
export function assertSvixError(reply: Reply, status: number, code: string): void {
  assert.equal(reply.status, status, `expected ${status} ${code}, got ${reply.status} ${JSON.stringify(reply.body)}`);
  if (status === 422) {
    assert.deepEqual(Object.keys(reply.body), ['detail']);
    assert.ok(reply.body.detail.length > 0 && reply.body.detail[0].msg.length > 0);
    return;
  }
  assert.deepEqual(Object.keys(reply.body).sort(), ['code', 'detail']);
  assert.equal(reply.body.code, code);
  assert.ok(reply.body.detail.length > 5);
}

/** Routes that need no key. */
export const PUBLIC_ROUTES: [method: string, path: string][] = [
  ['GET', '/healthz'],
  ['GET', '/api/v1/openapi.json'],
  ['POST', '/api/v1/dev/bootstrap'],
  ['GET', '/api/v1/health'],
];

/** A concrete path for a route pattern. */
export const concrete = (path: string, id = 'x_doesnotexist') => path.replace(/\{[a-z_]+\}/g, id);
