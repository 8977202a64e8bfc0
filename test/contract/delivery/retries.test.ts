import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closedPort, gapMs, oldestFirst, setup, startReceiver, type DeliveryRead } from '../../support/delivery.js';
import { child, database, emitMany, organization, receiver } from '../../support/burst.js';
import { eventually } from '../../support/receiver.js';

// Every kind of failure is recorded and retried on the schedule until the schedule runs out; a 2xx ends
// it; Retry-After on 429/503 is honoured; response bodies are kept only up to the configured limit.

test('5xx, 4xx, 3xx, timeouts, refused and reset connections are failures retried on schedule; 2xx succeeds', async (t) => {
  // The attempt timeout leaves room for a loaded machine (and undici's first-connection start-up) on
  // the answers that come at once; /slow answers long after it.
  const s = await setup(t, {
    HERALD_RETRY_SCHEDULE: '0s,200ms,400ms',
    HERALD_ATTEMPT_TIMEOUT: '1s',
    HERALD_RESPONSE_BODY_LIMIT: '64',
  });
  const receiver = await startReceiver(t, (r) => {
    switch (r.path) {
      case '/5xx':
        return { status: 500, body: 'E'.repeat(1000) };
      case '/4xx':
        return { status: 400, body: 'bad' };
      case '/3xx':
        return { status: 302, headers: { location: `${receiver.url}/other` } };
      case '/slow':
        return { status: 200, delayMs: 4_000 };
      case '/reset':
        return { destroy: true };
      default:
        return { status: 200, body: 'O'.repeat(1000) };
    }
  });
  const paths = ['/5xx', '/4xx', '/3xx', '/slow', '/reset', '/ok'];
  const endpoints = new Map<string, string>();
  for (const path of paths) endpoints.set((await s.endpoint(`${receiver.url}${path}`)).id, path);
  endpoints.set((await s.endpoint(`http://127.0.0.1:${await closedPort()}/refused`)).id, '/refused');

  const emitted = await s.emit({ kind: 'retry' });
  assert.equal(emitted.deliveryIds.length, 7);
  const list = await s.api.get(`/api/v1/messages/${emitted.id}/deliveries`);
  const pathOf = new Map<string, string>(
    list.body.data.map((d: { id: string; endpoint_id: string }) => [d.id, endpoints.get(d.endpoint_id)!]),
  );

  const settled = new Map<string, DeliveryRead>();
  for (const id of emitted.deliveryIds) {
    const d = await s.until(id, (d) => d.status !== 'pending', `delivery to ${pathOf.get(id)} to settle`);
    settled.set(pathOf.get(id)!, d);
  }

  const ok = settled.get('/ok')!;
  assert.equal(ok.status, 'success');
  assert.equal(ok.attempts.length, 1, JSON.stringify(ok));
  assert.equal(ok.attempts[0]!.response_status, 200);
  assert.equal(ok.attempts[0]!.error, null);
  assert.equal(ok.attempts[0]!.response_body, 'O'.repeat(64), 'response body capped at HERALD_RESPONSE_BODY_LIMIT');

  const expected: Record<string, { status: number | null; error: RegExp }> = {
    '/5xx': { status: 500, error: /500/ },
    '/4xx': { status: 400, error: /400/ },
    '/3xx': { status: 302, error: /redirect/i },
    '/slow': { status: null, error: /timed out/i },
    '/reset': { status: null, error: /./ },
    '/refused': { status: null, error: /ECONNREFUSED/ },
  };
  for (const [path, want] of Object.entries(expected)) {
    const d = settled.get(path)!;
    assert.equal(d.status, 'failed', `${path} fails`);
    assert.equal(d.next_attempt_at, null, `${path}: nothing left to do`);
    assert.equal(d.attempt_count, 3, `${path}: one attempt per schedule entry`);
    const attempts = oldestFirst(d);
    assert.deepEqual(
      attempts.map((a) => a.attempt_number),
      [1, 2, 3],
      path,
    );
    for (const a of attempts) {
      assert.equal(a.trigger, 'scheduled');
      assert.equal(a.status, 'failed');
      assert.equal(a.response_status, want.status, `${path} response_status`);
      assert.match(a.error ?? '', want.error, `${path} error: ${a.error}`);
      assert.ok(Number.isInteger(a.duration_ms) && a.duration_ms >= 0);
      assert.ok(!Number.isNaN(Date.parse(a.created_at)));
    }
    // On schedule: each retry waited at least its (jittered) delay; only a lower bound is safe to assert.
    assert.ok(gapMs(attempts[0]!, attempts[1]!) >= 150, `${path}: second attempt too early`);
    assert.ok(gapMs(attempts[1]!, attempts[2]!) >= 300, `${path}: third attempt too early`);
  }
  assert.equal(settled.get('/5xx')!.attempts[0]!.response_body, 'E'.repeat(64));
  assert.ok(
    settled.get('/slow')!.attempts.every((a) => a.duration_ms >= 900 && a.duration_ms < 4_000),
    'whole-attempt timeout cut the wait',
  );
  // Redirects are not followed.
  assert.equal(receiver.received.filter((r) => r.path === '/other').length, 0);
  assert.equal(receiver.received.filter((r) => r.path === '/3xx').length, 3);

  const endpoint = await s.api.get(`/api/v1/endpoints/${[...endpoints].find(([, p]) => p === '/5xx')![0]}`);
  assert.equal(endpoint.body.status, 'failing');
});

test('Retry-After on 429 and 503 is honoured; on other statuses the schedule decides', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s,50ms' });
  const seen = new Map<string, number>();
  const receiver = await startReceiver(t, (r) => {
    const n = (seen.get(r.path) ?? 0) + 1;
    seen.set(r.path, n);
    if (n > 1) return { status: 200 };
    if (r.path === '/429') return { status: 429, headers: { 'retry-after': '1' } };
    if (r.path === '/503')
      return { status: 503, headers: { 'retry-after': new Date(Date.now() + 2_000).toUTCString() } };
    return { status: 500, headers: { 'retry-after': '30' } };
  });
  const ids = new Map<string, string>();
  for (const path of ['/429', '/503', '/500']) ids.set((await s.endpoint(`${receiver.url}${path}`)).id, path);
  const emitted = await s.emit();
  const byPath = new Map<string, DeliveryRead>();
  for (const id of emitted.deliveryIds) {
    const d = await s.until(id, (d) => d.status === 'success', 'success on the second attempt');
    byPath.set(ids.get(d.endpoint_id)!, d);
  }
  const gap = (path: string) => {
    const [first, second] = oldestFirst(byPath.get(path)!);
    return gapMs(first!, second!);
  };
  assert.ok(gap('/429') >= 900, `429 Retry-After: 1 honoured (gap ${gap('/429')}ms)`);
  // An HTTP date has one-second resolution: "2 s from now" is at least 1 s away.
  assert.ok(gap('/503') >= 900, `503 Retry-After date honoured (gap ${gap('/503')}ms)`);
  assert.equal(oldestFirst(byPath.get('/429')!)[0]!.response_status, 429);
  // A 500's Retry-After is not a reason to wait 30 s: the retry comes on schedule (the test would time out).
  assert.equal(byPath.get('/500')!.attempts.length, 2);
});

test("a receiver's answer with NUL bytes and bytes that are not UTF-8 is recorded with them replaced, and the delivery moves on", async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s,50ms' });
  const answer = Buffer.concat([Buffer.from('a\u0000b'), Buffer.from([0xff, 0xfe]), Buffer.from('c\u0000')]);
  const receiver = await startReceiver(t, () => ({ status: 500, body: answer }));
  await s.endpoint(`${receiver.url}/nul`);
  const emitted = await s.emit();
  const settled = await s.until(emitted.deliveryIds[0]!, (d) => d.status === 'failed', 'both attempts recorded');
  assert.equal(settled.attempts.length, 2);
  for (const attempt of settled.attempts) {
    assert.equal(attempt.response_status, 500);
    assert.equal(attempt.response_body, 'a\uFFFDb\uFFFD\uFFFDc\uFFFD');
  }
  assert.equal(receiver.received.length, 2, 'each attempt sent once: none waits for a lease to be sent again');
});

test('a 429 with Retry-After pauses the whole endpoint: no request reaches it until then, and the pause uses no attempt', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s,50ms', HERALD_ENDPOINT_CONCURRENCY: '1' });
  let first = true;
  const receiver = await startReceiver(t, () => {
    if (!first) return { status: 200 };
    first = false;
    return { status: 429, headers: { 'retry-after': '2' } };
  });
  const other = await startReceiver(t);
  await s.endpoint(`${receiver.url}/quiet`);
  const emitted = [];
  for (let i = 0; i < 5; i++) emitted.push(await s.emit({ i }));
  // Each message also goes to a second endpoint, which no pause holds back.
  await s.endpoint(`${other.url}/busy`);
  const more = await s.emit({ i: 'other' });
  await other.waitFor(1, 1_500);
  await receiver.waitFor(6, 15_000);
  const [asked, ...rest] = receiver.received;
  const quietFor = Math.min(...rest.map((r) => r.at)) - asked!.at;
  assert.ok(quietFor >= 1_900, `the endpoint heard nothing for ${quietFor} ms after asking for 2 s`);
  // The pause is no failure: every delivery succeeds, and only the one that got the 429 used two attempts.
  const reads = await Promise.all(
    emitted.map((e) => s.until(e.deliveryIds[0]!, (d) => d.status === 'success', 'delivered')),
  );
  assert.deepEqual(reads.map((d) => d.attempts.length).sort(), [1, 1, 1, 1, 2]);
  assert.ok(more.deliveryIds.length === 2);
});

test('a pause gives back what the worker held for the endpoint, due when the pause ends (a worker that claimed them all at once)', async (t) => {
  const db = await database(t);
  let first = true;
  const hooks = await receiver(t, () => {
    if (!first) return { status: 200 };
    first = false;
    return { status: 429, headers: { 'retry-after': '2' } };
  });
  const env = { ...db.env, HERALD_RETRY_SCHEDULE: '0s,50ms', HERALD_ENDPOINT_CONCURRENCY: '1' };
  const api = await child(t, { ...env, HERALD_ROLE: 'api' });
  const { api: client, appId } = await organization(api.url!, hooks.url);
  const accepted = await emitMany(client, appId, 5, 1);
  // The worker starts with all five due: its first claim takes them, one goes out, four wait in its lane.
  await child(t, { ...env, HERALD_ROLE: 'worker' });
  await eventually(async () => hooks.received.length >= 6, 20_000, 'every message after the pause');
  const [asked, ...rest] = hooks.received;
  const quietFor = Math.min(...rest.map((r) => r.at)) - asked!.at;
  assert.ok(quietFor >= 1_900, `the endpoint heard nothing for ${quietFor} ms after asking for 2 s`);
  for (const id of accepted) {
    const list = await client.get(`/api/v1/messages/${id}/deliveries`);
    await eventually(
      async () => (await client.get(`/api/v1/deliveries/${list.body.data[0].id}`)).body.status === 'success',
      10_000,
      'delivered',
    );
  }
});
