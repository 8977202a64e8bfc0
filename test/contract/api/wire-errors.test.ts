import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, type Client } from '../../support/client.js';
import { eventually } from '../../support/receiver.js';
import { assertError } from '../../support/api.js';

// What reaches the service below the routes: requests Node's HTTP parser refuses get the error envelope
// like any other error, and what the log keeps of a request leaves out credentials a client put in it.

/** Sends raw bytes on a fresh connection and returns everything the server answered before closing it. */
function rawRequest(url: string, bytes: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(bytes));
    let answer = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk));
    socket.on('close', () => resolve(answer)).on('error', reject);
  });
}

describe('errors on the wire and what the log keeps', () => {
  let service: TestService;
  let api: Client;
  const lines: string[] = [];

  before(async () => {
    service = await startTestService({ HERALD_ROLE: 'api' }, undefined, lines);
    ({ test: api } = await bootstrap(service.url));
  });
  after(async () => service?.stop());

  test('requests the HTTP parser refuses get the envelope with a request_id that the log line also carries', async () => {
    const cases: [string, number][] = [
      ['POST /api/v1/messages HTTP/1.1\r\nHost: x\r\nidempotency-key: a\u0001b\r\nContent-Length: 2\r\n\r\n{}', 400],
      [
        'POST /api/v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
        400,
      ],
      ['FOO /api/v1/messages HTTP/1.1\r\nHost: x\r\n\r\n', 400],
      [`GET /api/v1/messages HTTP/1.1\r\nHost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
    ];
    for (const [bytes, status] of cases) {
      const answer = await rawRequest(service.url, bytes);
      const [head, body] = answer.split('\r\n\r\n');
      assert.match(head!, new RegExp(`^HTTP/1.1 ${status} `), answer.slice(0, 200));
      const parsed = JSON.parse(body!);
      assert.deepEqual(Object.keys(parsed.error), ['code', 'message', 'request_id']);
      assert.equal(parsed.error.code, 'invalid_request');
      assert.match(parsed.error.request_id, /^req_/);
      assert.match(head!, new RegExp(`x-request-id: ${parsed.error.request_id}`, 'i'));
      await eventually(
        async () => lines.some((line) => line.includes(parsed.error.request_id) && line.includes(`"status":${status}`)),
        5_000,
        'the log line',
      );
    }
  });

  test('credential-like query values and the text of a body that is not JSON stay out of the log', async () => {
    const key = api.key!;
    assertError(
      await api.withKey('').get(`/api/v1/messages?limit=5&api_key=${key}&access_token=tok_secret123`),
      401,
      'unauthorized',
    );
    // Names spelled with escapes are the same names to the server: `api%5Fkey` is api_key, `%6Bey` is key.
    assertError(
      await api
        .withKey('')
        .get(`/api/v1/messages?limit=6&api%5Fkey=escaped_secret1&%6Bey=escaped_secret2&x%ZZ+tok%65n=escaped_secret3`),
      401,
      'unauthorized',
    );
    // A URL that fails to parse is not echoed: it may hold a password.
    const app = await api.post('/api/v1/applications', { name: 'wire' });
    const badUrl = await api.post('/api/v1/endpoints', { app_id: app.body.id, url: 'http://u:SECRETpw@[::1/hook' });
    assertError(badUrl, 400, 'invalid_request', /url is not a valid absolute URL/);
    assert.doesNotMatch(badUrl.body.error.message, /SECRET/);
    const notJson = await api.post('/api/v1/messages', 'sk_live_SECRETSECRETSECRET');
    assertError(notJson, 400, 'invalid_request', /not valid JSON/);
    assert.doesNotMatch(notJson.body.error.message, /SECRET/, 'the message does not quote the body');
    await eventually(async () => lines.some((line) => line.includes('api_key=<redacted>')), 5_000, 'the request line');
    assert.ok(
      lines.some((line) => line.includes('limit=5&api_key=<redacted>&access_token=<redacted>')),
      'other parameters are kept',
    );
    await eventually(
      async () =>
        lines.some((line) => line.includes('limit=6&api%5Fkey=<redacted>&%6Bey=<redacted>&x%ZZ+tok%65n=<redacted>')),
      5_000,
      'the escaped names',
    );
    assert.deepEqual(
      lines.filter(
        (line) =>
          line.includes(key) ||
          line.includes('tok_secret123') ||
          line.includes('SECRET') ||
          line.includes('escaped_secret'),
      ),
      [],
    );
  });
});

test('a request whose body stalls is answered 408 and closed after HERALD_REQUEST_TIMEOUT', async (t) => {
  const service = await startTestService({ HERALD_ROLE: 'api', HERALD_REQUEST_TIMEOUT: '1s' });
  t.after(() => service.stop());
  const { test: api } = await bootstrap(service.url);
  const { hostname, port } = new URL(service.url);
  const started = Date.now();
  // Headers and one byte of a 20-byte body, then nothing: the connection stays open until the server cuts it.
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(port), hostname, () =>
      socket.write(
        `POST /api/v1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${api.key}\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{`,
      ),
    );
    let text = '';
    const bound = setTimeout(() => {
      socket.destroy();
      reject(new Error('the server kept the stalled request open for 20 s'));
    }, 20_000);
    socket.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
    socket.on('close', () => (clearTimeout(bound), resolve(text))).on('error', reject);
  });
  assert.match(answer, /^HTTP\/1.1 408 /, answer.slice(0, 200));
  assert.equal(JSON.parse(answer.split('\r\n\r\n')[1]!).error.code, 'request_timeout');
  assert.ok(Date.now() - started >= 1_000, 'not before the timeout');
  assert.equal((await api.get('/api/v1/applications')).status, 200, 'the service goes on serving');
});

test('a request under way when the service closes is answered, and the close does not wait out its keep-alive', async () => {
  const service = await startTestService({ HERALD_ROLE: 'api' });
  const { test: api } = await bootstrap(service.url);
  const { hostname, port } = new URL(service.url);
  const socket = connect(Number(port), hostname);
  await new Promise((resolve) => socket.once('connect', resolve));
  let answer = '';
  socket.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk));
  const closed = new Promise((resolve) => socket.once('close', resolve));
  // A keep-alive request whose body is still arriving when the close begins, so it is under way then.
  const body = JSON.stringify({ name: 'closing' });
  socket.write(
    `POST /api/v1/applications HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${api.key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 3)}`,
  );
  await new Promise((resolve) => setTimeout(resolve, 100));
  const started = Date.now();
  const stopping = service.stop();
  await new Promise((resolve) => setTimeout(resolve, 100));
  socket.write(body.slice(3));
  await stopping;
  await closed;
  assert.match(answer, /^HTTP\/1.1 201 /, answer.slice(0, 200));
  // Without closing it once idle, the connection stayed open for the keep-alive timeout (65 s), and the close
  // with it.
  const ms = Date.now() - started;
  assert.ok(ms < 20_000, `the close took ${ms} ms`);
});
