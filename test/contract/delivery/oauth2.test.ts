import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { setup, startReceiver, verifies } from '../../support/delivery.js';
import { assertError } from '../../support/api.js';
import { TokenServer } from '../../support/token-server.js';
import { ForwardProxy } from '../../support/forward-proxy.js';
import { startTestService } from '../../support/service.js';
import { bootstrap } from '../../support/client.js';
import { eventually } from '../../support/receiver.js';
import { makeCa } from '../../support/certificates.js';

// An endpoint's `auth` (decisions: "Enterprise receivers"): OAuth2 client credentials. Herald fetches a
// token from the receiver's own token server (a real one on loopback), keeps it per endpoint until
// shortly before it expires, sends it as a bearer token, and on a 401 fetches a new one once before the
// attempt counts as failed. The client secret is sealed at rest and redacted on reads.

const CLIENT_ID = 'herald client';
const CLIENT_SECRET = 'cl1ent-s3cret:with/odd+chars';

async function tokenServer(t: TestContext): Promise<TokenServer> {
  const server = await new TokenServer(CLIENT_ID, CLIENT_SECRET).start();
  t.after(() => server.stop());
  return server;
}

/** A receiver that answers 200 to a token the token server issued and still honours, 401 otherwise. */
async function checkingReceiver(t: TestContext, tokens: TokenServer) {
  return startReceiver(t, (r) => (tokens.accepts(r.headers.authorization) ? { status: 200 } : { status: 401 }));
}

const auth = (tokens: TokenServer, extra: Record<string, unknown> = {}) => ({
  type: 'oauth2_client_credentials',
  token_url: tokens.url,
  client_id: CLIENT_ID,
  client_secret: CLIENT_SECRET,
  ...extra,
});

test('one token serves many attempts; the secret is sealed and redacted; the request carries the bearer token', async (t) => {
  const s = await setup(t);
  const tokens = await tokenServer(t);
  const receiver = await checkingReceiver(t, tokens);
  const created = await s.api.post('/api/v1/endpoints', {
    app_id: s.appId,
    url: `${receiver.url}/hook`,
    auth: auth(tokens, { scope: 'webhooks:write', audience: 'https://receiver.example' }),
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const shown = {
    type: 'oauth2_client_credentials',
    token_url: tokens.url,
    client_id: CLIENT_ID,
    client_secret: '<redacted>',
    scope: 'webhooks:write',
    audience: 'https://receiver.example',
    client_auth: 'basic',
  };
  assert.deepEqual(created.body.auth, shown);
  assert.deepEqual((await s.api.get(`/api/v1/endpoints/${created.body.id}`)).body.auth, shown);
  assert.ok(!JSON.stringify((await s.api.get(`/api/v1/endpoints?app_id=${s.appId}`)).body).includes(CLIENT_SECRET));
  const row = await s.service.store.ctx.db
    .selectFrom('endpoints')
    .selectAll()
    .where('id', '=', created.body.id)
    .executeTakeFirstOrThrow();
  assert.ok(!JSON.stringify(row).includes(CLIENT_SECRET), 'sealed at rest');
  assert.equal(s.service.store.endpoints.authSecret(row), CLIENT_SECRET);

  const ids: string[] = [];
  for (let n = 0; n < 5; n++) ids.push(...(await s.emit({ n })).deliveryIds);
  for (const id of ids) await s.until(id, (d) => d.status === 'success', 'delivered with a token');
  // The attempt shows that a bearer token went, never the token.
  const attempt = (await s.delivery(ids[0]!)).attempts[0]!;
  assert.equal(attempt.request_headers?.authorization, '<redacted>');
  assert.ok(!JSON.stringify(attempt).includes('Bearer '));
  assert.equal(tokens.requests.length, 1, 'one token fetch for five attempts');
  assert.equal(tokens.requests[0]!.method, 'basic');
  assert.deepEqual(tokens.requests[0]!.form, {
    grant_type: 'client_credentials',
    scope: 'webhooks:write',
    audience: 'https://receiver.example',
  });
  const bearer = new Set(receiver.received.map((r) => r.headers.authorization));
  assert.equal(bearer.size, 1);
  assert.match([...bearer][0]!, /^Bearer tok_1_/);
  assert.ok(verifies(receiver.received[0]!, created.body.signing_secret), 'still signed');

  // `post` puts the client's id and secret in the form; "<redacted>" keeps the stored secret; null removes.
  const updated = await s.api.patch(`/api/v1/endpoints/${created.body.id}`, {
    auth: auth(tokens, { client_secret: '<redacted>', client_auth: 'post' }),
  });
  assert.equal(updated.status, 200, JSON.stringify(updated.body));
  assert.equal(updated.body.auth.client_auth, 'post');
  const next = await s.emit({ n: 'post' });
  await s.until(next.deliveryIds[0]!, (d) => d.status === 'success', 'delivered after the client changed');
  assert.equal(tokens.requests.length, 2, 'a changed client fetches a new token');
  assert.deepEqual(tokens.requests[1]!, {
    method: 'post',
    form: { grant_type: 'client_credentials', client_id: CLIENT_ID, client_secret: CLIENT_SECRET },
  });
  const removed = await s.api.patch(`/api/v1/endpoints/${created.body.id}`, { auth: null });
  assert.equal(removed.body.auth, null);
  const plain = await s.emit({ n: 'plain' });
  await s.until(plain.deliveryIds[0]!, (d) => d.status === 'failed' || d.attempt_count > 0, 'attempted');
  assert.equal(receiver.received.at(-1)!.headers.authorization, undefined, 'no token once auth is removed');
});

test('a token is fetched again after it expires, and after a 401 (once per attempt)', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s' });
  const tokens = await tokenServer(t);
  tokens.lifetimeSeconds = 1;
  const receiver = await checkingReceiver(t, tokens);
  await s.endpoint(`${receiver.url}/hook`, { auth: auth(tokens) });
  const first = await s.emit();
  await s.until(first.deliveryIds[0]!, (d) => d.status === 'success', 'first');
  // Past its expiry (renewed shortly before it): a new token.
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  const second = await s.emit();
  await s.until(second.deliveryIds[0]!, (d) => d.status === 'success', 'second');
  assert.equal(tokens.requests.length, 2, 'fetched again after expiry');
  assert.notEqual(receiver.received[0]!.headers.authorization, receiver.received[1]!.headers.authorization);

  // The receiver stops honouring the token (revoked): its 401 fetches a new one, and the same attempt
  // succeeds with it.
  tokens.lifetimeSeconds = 3600;
  const third = await s.emit();
  await s.until(third.deliveryIds[0]!, (d) => d.status === 'success', 'third');
  const fetched = tokens.requests.length;
  tokens.revokeAll();
  const fourth = await s.emit();
  const d = await s.until(fourth.deliveryIds[0]!, (read) => read.status === 'success', 'after a 401');
  assert.equal(d.attempts.length, 1, 'one attempt: the 401 was answered by a new token');
  assert.equal(tokens.requests.length, fetched + 1);
  const [refused, accepted] = receiver.received.slice(-2);
  assert.notEqual(refused!.headers.authorization, accepted!.headers.authorization);

  // A receiver that refuses every token: one new token, one more request, then the attempt fails.
  receiver.respond = () => ({ status: 401, body: 'no' });
  const before = receiver.received.length;
  const fifth = await s.emit();
  const failed = await s.until(fifth.deliveryIds[0]!, (read) => read.status === 'failed', 'refused');
  assert.equal(failed.attempts[0]!.response_status, 401);
  assert.equal(receiver.received.length - before, 2, 'sent twice: with the kept token and with a new one');
  assert.equal(tokens.requests.length, fetched + 2);
});

test('a token answered with expires_in 1e306 is still dropped on a 401 and fetched again', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s' });
  const tokens = await tokenServer(t);
  // 1e306 seconds is Infinity in milliseconds: the token is kept for at most a day, and stays a token a
  // receiver's 401 can drop.
  tokens.lifetimeSeconds = 1e306;
  const receiver = await checkingReceiver(t, tokens);
  await s.endpoint(`${receiver.url}/hook`, { auth: auth(tokens) });
  const first = await s.emit();
  await s.until(first.deliveryIds[0]!, (d) => d.status === 'success', 'first');
  assert.equal(tokens.requests.length, 1);
  tokens.revokeAll();
  const second = await s.emit();
  const d = await s.until(second.deliveryIds[0]!, (read) => read.status !== 'pending', 'after a 401');
  assert.equal(d.status, 'success', JSON.stringify(d.attempts));
  assert.equal(d.attempts.length, 1, 'one attempt: the 401 was answered by a new token');
  assert.equal(tokens.requests.length, 2, 'the 401 fetched a new token');
  const [refused, accepted] = receiver.received.slice(-2);
  assert.notEqual(refused!.headers.authorization, accepted!.headers.authorization);
});

test('a token server that fails is an attempt failure saying so; the delivery goes once it is back', async (t) => {
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '0s,1s,1s,1s' });
  const tokens = await tokenServer(t);
  const receiver = await checkingReceiver(t, tokens);
  tokens.failWith = 503;
  await s.endpoint(`${receiver.url}/hook`, { auth: auth(tokens) });
  const { deliveryIds } = await s.emit();
  const failing = await s.until(deliveryIds[0]!, (d) => d.attempt_count >= 1, 'a failed attempt');
  const host = new URL(tokens.url).host;
  assert.equal(failing.attempts[0]!.error, `OAuth2 token request to ${host} failed: HTTP 503: server_error`);
  assert.equal(failing.attempts[0]!.response_status, null);
  assert.equal(receiver.received.length, 0, 'nothing sent without a token');
  tokens.failWith = null;
  await s.until(deliveryIds[0]!, (d) => d.status === 'success', 'delivered once the token server is back');

  // A token server that is not there at all, and wrong client credentials.
  const down = await s.endpoint(`${receiver.url}/down`, {
    auth: auth(tokens, { token_url: 'http://127.0.0.1:9/token' }),
  });
  const wrong = await s.endpoint(`${receiver.url}/wrong`, { auth: auth(tokens, { client_secret: 'not-it' }) });
  const emitted = await s.emit();
  const errorOf = async (endpointId: string) => {
    const reads = await Promise.all(
      emitted.deliveryIds.map((id) => s.until(id, (d) => d.attempt_count >= 1, 'attempted')),
    );
    return reads.find((d) => d.endpoint_id === endpointId)!.attempts[0]!.error ?? '';
  };
  assert.match(await errorOf(down.id), /^OAuth2 token request to 127\.0\.0\.1:9 failed: .*ECONNREFUSED/);
  assert.equal(await errorOf(wrong.id), `OAuth2 token request to ${host} failed: HTTP 401: invalid_client`);
});

test('token requests follow the endpoint address rules and go through the egress proxy', async (t) => {
  const proxy = await new ForwardProxy().start();
  t.after(() => proxy.stop());
  const s = await setup(t, { HERALD_OUTBOUND_PROXY: proxy.url });
  const tokens = await tokenServer(t);
  const receiver = await checkingReceiver(t, tokens);
  await s.endpoint(`${receiver.url}/hook`, { auth: auth(tokens) });
  const { deliveryIds } = await s.emit();
  await s.until(deliveryIds[0]!, (d) => d.status === 'success', 'delivered through the proxy');
  assert.ok(
    proxy.log.some((e) => e.method === 'POST' && e.target === tokens.url),
    JSON.stringify(proxy.log),
  );
  assert.ok(proxy.log.some((e) => e.target.startsWith(`${receiver.url}/hook`)));
});

test('bad auth is 400 naming the field, and nothing is stored', async (t) => {
  const s = await setup(t);
  const before = (await s.api.get(`/api/v1/endpoints?app_id=${s.appId}`)).body.data.length;
  const base = {
    type: 'oauth2_client_credentials',
    token_url: 'https://auth.example/token',
    client_id: 'id',
    client_secret: CLIENT_SECRET,
  };
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ ...base, token_url: 'http://169.254.169.254/token' }, /auth\.token_url: must not point at a link-local/],
    [{ ...base, token_url: 'not a url' }, /auth\.token_url/],
    [{ ...base, token_url: 'ftp://auth.example/token' }, /auth\.token_url: must use http or https/],
    [{ ...base, token_url: 'https://user:pw@auth.example/token' }, /auth\.token_url: must not contain a user name/],
    [{ ...base, type: 'password' }, /auth/],
    [{ ...base, client_secret: undefined }, /client_secret/],
    [
      { ...base, client_secret: '<redacted>' },
      /auth\.client_secret is "<redacted>" but the endpoint has no client secret/,
    ],
    [{ ...base, client_auth: 'jwt' }, /client_auth/],
    [{ ...base, extra: 1 }, /auth/],
  ];
  for (const [body, message] of cases) {
    const reply = await s.api.post('/api/v1/endpoints', { app_id: s.appId, url: 'http://127.0.0.1:9/h', auth: body });
    assertError(reply, 400, 'invalid_request', message);
    assert.ok(!JSON.stringify(reply.body).includes(CLIENT_SECRET));
  }
  // Live endpoints: the token URL must be https to a public host, as the endpoint URL must.
  const liveUrl = 'https://receiver.example/hook';
  for (const token_url of ['http://auth.example/token', 'https://127.0.0.1/token', 'https://localhost/token'])
    assertError(
      await s.live.post('/api/v1/endpoints', { app_id: s.liveAppId, url: liveUrl, auth: { ...base, token_url } }),
      400,
      'invalid_request',
      /^auth\.token_url: must/,
    );
  assert.equal((await s.api.get(`/api/v1/endpoints?app_id=${s.appId}`)).body.data.length, before);
  assert.equal((await s.live.get(`/api/v1/endpoints?app_id=${s.liveAppId}`)).body.data.length, 0);
});

test('client secrets, client keys, tokens and proxy credentials never reach the logs', async (t) => {
  const proxy = await new ForwardProxy({ user: 'herald', password: 'pr0xy-l0g-secret' }).start();
  t.after(() => proxy.stop());
  const tokens = await tokenServer(t);
  const receiver = await checkingReceiver(t, tokens);
  const lines: string[] = [];
  const service = await startTestService(
    { HERALD_OUTBOUND_PROXY: proxy.url, HERALD_RETRY_SCHEDULE: '0s' },
    undefined,
    lines,
  );
  t.after(() => service.stop());
  const { test: api } = await bootstrap(service.url);
  const app = (await api.post('/api/v1/applications', { name: 'Logs' })).body;
  const ca = makeCa('Logs CA');
  const clientIdentity = ca.issue('logs-client', 'client');
  const made = await api.post('/api/v1/endpoints', {
    app_id: app.id,
    url: `${receiver.url}/hook`,
    auth: auth(tokens),
    tls: { client_cert: clientIdentity.cert, client_key: clientIdentity.key },
  });
  assert.equal(made.status, 201);
  // Refused input that carries the secrets is logged too (as a 400).
  await api.post('/api/v1/endpoints', {
    app_id: app.id,
    url: `${receiver.url}/bad`,
    auth: { ...auth(tokens), token_url: 'http://169.254.169.254/' },
    tls: { client_cert: 'x', client_key: clientIdentity.key },
  });
  const emitted = await api.post('/api/v1/messages', { app_id: app.id, event_type: 'invoice.paid', payload: {} });
  await eventually(async () => {
    const read = await api.get(`/api/v1/deliveries/${emitted.body.delivery_ids[0]}`);
    return read.body.status === 'success';
  });
  const token = String(receiver.received[0]!.headers.authorization).slice('Bearer '.length);
  const keyBody = clientIdentity.key.split('\n').slice(1, -2).join('');
  const logged = lines.join('\n');
  assert.ok(lines.length > 3, 'the service logged');
  for (const secret of [CLIENT_SECRET, token, keyBody.slice(0, 40), 'pr0xy-l0g-secret'])
    assert.ok(!logged.includes(secret), `${secret.slice(0, 8)}… is not in the logs`);
});
