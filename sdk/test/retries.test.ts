import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { Herald, HeraldError } from '../src/index.js';
import { all, startWorld } from './helpers.js';
import { Front } from './front.js';

// Retries against the real service: through a real HTTP server in front of it that fails requests as a
// load balancer would (before or after forwarding them), and against the service's own rate limit.

const EMIT = ['POST', '/api/v1/messages'] as const;

/** A service with one application, and a client that reaches it through a Front. */
async function throughFront(t: TestContext, options: { maxRetries?: number; timeoutMs?: number } = {}) {
  const world = await startWorld(t, { HERALD_ROLE: 'api' });
  const front = await new Front(world.service.url).start();
  t.after(() => front.stop());
  const herald = new Herald({ baseUrl: front.url, apiKey: world.testKey, retryDelayMs: 10, ...options });
  await world.herald.eventTypes.create({ name: 'order.created' });
  const app = await world.herald.applications.create({ name: 'Acme' });
  const emit = { app_id: app.id, event_type: 'order.created', payload: { order: 1 } };
  const stored = async () => all(world.herald.messages.list({ app_id: app.id }));
  return { world, front, herald, app, emit, stored };
}

async function heraldError(promise: Promise<unknown>): Promise<HeraldError> {
  const error = await promise.then(
    () => assert.fail('expected a HeraldError'),
    (error: unknown) => error,
  );
  assert.ok(error instanceof HeraldError, `not a HeraldError: ${error}`);
  return error;
}

describe('messages.create retries', () => {
  test('a 5xx answered after the message was stored is retried with the same key: one message, not two', async (t) => {
    const { front, herald, emit, stored } = await throughFront(t);
    front.plan = (request) =>
      request.method === 'POST' && front.requests(...EMIT).length === 1 ? 'forward-then-502' : 'forward';
    const message = await herald.messages.create(emit);
    const tries = front.requests(...EMIT);
    assert.equal(tries.length, 2);
    const key = tries[0]!.headers['idempotency-key'];
    assert.match(String(key), /^sdk_[0-9a-f-]{36}$/, 'a key of its own when none is given');
    assert.equal(tries[1]!.headers['idempotency-key'], key, 'the retry carries the same key');
    assert.equal(message.idempotent, true, 'the second try found the message the first one stored');
    assert.deepEqual(
      (await stored()).map((m) => m.id),
      [message.id],
    );
  });

  test('a dropped connection after the message was stored is retried with the key given: one message', async (t) => {
    const { front, herald, emit, stored } = await throughFront(t);
    front.plan = (request) =>
      request.method === 'POST' && front.requests(...EMIT).length === 1 ? 'forward-then-drop' : 'forward';
    const message = await herald.messages.create(emit, { idempotencyKey: 'order-7' });
    assert.deepEqual(
      front.requests(...EMIT).map((request) => request.headers['idempotency-key']),
      ['order-7', 'order-7'],
    );
    assert.deepEqual(
      (await stored()).map((m) => m.id),
      [message.id],
    );
  });

  test('the body idempotency_key is the key sent, and kept on retries', async (t) => {
    const { front, herald, emit, stored } = await throughFront(t);
    front.plan = (request) =>
      request.method === 'POST' && front.requests(...EMIT).length === 1 ? 'forward-then-502' : 'forward';
    const message = await herald.messages.create({ ...emit, idempotency_key: 'order-8' });
    assert.deepEqual(
      front.requests(...EMIT).map((request) => request.headers['idempotency-key']),
      ['order-8', 'order-8'],
    );
    assert.deepEqual(
      (await stored()).map((m) => m.id),
      [message.id],
    );
  });

  test('a 503 with Retry-After is retried after the wait it asks for', async (t) => {
    const { front, herald, emit, stored } = await throughFront(t);
    front.plan = (_request, index) => (index === 0 ? { status: 503, headers: { 'retry-after': '1' } } : 'forward');
    const started = Date.now();
    const message = await herald.messages.create(emit);
    assert.ok(Date.now() - started >= 950, `retried after ${Date.now() - started} ms, Retry-After was 1 s`);
    assert.equal(front.requests(...EMIT).length, 2);
    assert.equal(message.idempotent, false, 'the first try never reached the service');
    assert.deepEqual(
      (await stored()).map((m) => m.id),
      [message.id],
    );
  });

  test('gives up after maxRetries, with the last answer as a HeraldError', async (t) => {
    const { front, herald, emit, stored } = await throughFront(t, { maxRetries: 2 });
    front.plan = () => ({ status: 503 });
    const error = await heraldError(herald.messages.create(emit));
    assert.equal(error.status, 503);
    assert.equal(error.code, 'http_error');
    assert.equal(error.request_id, null);
    assert.equal(front.requests(...EMIT).length, 3);
    assert.deepEqual(await stored(), []);
  });

  test('a try with no answer times out and is retried; the last one is a timeout error', async (t) => {
    const { front, herald, emit } = await throughFront(t, { maxRetries: 1, timeoutMs: 200 });
    front.plan = () => 'hang';
    const error = await heraldError(herald.messages.create(emit));
    assert.equal(error.status, 0);
    assert.equal(error.code, 'timeout');
    assert.equal(front.requests(...EMIT).length, 2);
  });

  test('a refusal (400, 404) is not retried: HeraldError with the envelope', async (t) => {
    const { front, herald, emit, stored } = await throughFront(t);
    const invalid = await heraldError(herald.messages.create({ ...emit, event_type: 'not.in.catalog' }));
    assert.equal(invalid.status, 400);
    assert.equal(invalid.code, 'invalid_request');
    assert.match(invalid.message, /not\.in\.catalog/);
    assert.match(invalid.request_id ?? '', /^req_/);
    const missing = await heraldError(herald.messages.create({ ...emit, app_id: 'app_doesnotexist' }));
    assert.equal(missing.status, 404);
    assert.equal(missing.code, 'not_found');
    assert.equal(front.requests(...EMIT).length, 2, 'one try each');
    assert.deepEqual(await stored(), []);
  });
});

describe('other requests', () => {
  test('a read is retried after a 5xx; a write other than an emit is not, since it may have been done', async (t) => {
    const { front, herald, app } = await throughFront(t);
    const path = `/api/v1/applications/${app.id}`;
    front.plan = (request) =>
      request.method === 'GET' && front.requests('GET', path).length === 1 ? { status: 502 } : 'forward';
    assert.equal((await herald.applications.get(app.id)).id, app.id);
    assert.equal(front.requests('GET', path).length, 2);

    front.plan = (request) => (request.method === 'POST' ? 'forward-then-502' : 'forward');
    const error = await heraldError(herald.applications.create({ name: 'Once', uid: 'once' }));
    assert.equal(error.status, 502);
    assert.equal(front.requests('POST', '/api/v1/applications').length, 1);
    assert.equal((await herald.applications.get('once')).name, 'Once', 'the write was done: a retry would repeat it');
  });

  test('a service that cannot be reached is a connection_error after the retries', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    let tries = 0;
    const herald = new Herald({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: 'sk_test_x',
      retryDelayMs: 10,
      maxRetries: 2,
      fetch: (input, init) => {
        tries++;
        return fetch(input, init);
      },
    });
    const error = await heraldError(herald.messages.get('evt_x'));
    assert.equal(error.status, 0);
    assert.equal(error.code, 'connection_error');
    assert.equal(tries, 3);
  });
});

test("the service's own 429 is retried after its Retry-After, with the same key: one message", async (t) => {
  const LIMIT = 3;
  const world = await startWorld(t, {
    HERALD_ROLE: 'api',
    HERALD_DEFAULT_PLAN: 'starter',
    HERALD_PLANS: `starter:${LIMIT}`,
  });
  const tries: { method: string; url: string; status: number; key: string | null }[] = [];
  const herald = new Herald({
    baseUrl: world.service.url,
    apiKey: world.testKey,
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      const headers = new Headers(init?.headers);
      tries.push({
        method: init?.method ?? 'GET',
        url: String(input),
        status: response.status,
        key: headers.get('idempotency-key'),
      });
      return response;
    },
  });
  await herald.eventTypes.create({ name: 'order.created' });
  // An application per round: a round whose requests a slow machine spread over two seconds is run again.
  const apps = [];
  for (let round = 0; round < 3; round++) apps.push(await herald.applications.create({ name: `round ${round}` }));
  for (const app of apps) {
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    tries.length = 0;
    // Spend the second's requests, then emit.
    for (let n = 0; n < LIMIT; n++) await herald.applications.get(app.id);
    const message = await herald.messages.create({ app_id: app.id, event_type: 'order.created', payload: {} });
    const emits = tries.filter((entry) => entry.method === 'POST');
    if (tries.slice(0, LIMIT).some((entry) => entry.status !== 200) || emits[0]!.status !== 429) continue;
    assert.equal(emits.at(-1)!.status, 201);
    assert.ok(emits.length >= 2);
    assert.ok(emits.every((entry) => entry.key === emits[0]!.key && /^sdk_/.test(entry.key ?? '')));
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    assert.deepEqual(
      (await all(herald.messages.list({ app_id: app.id }))).map((m) => m.id),
      [message.id],
    );
    return;
  }
  assert.fail(`no round saw the emit limited: ${JSON.stringify(tries)}`);
});
