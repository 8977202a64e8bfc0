import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, Client, type Reply } from '../../support/client.js';
import { assertError } from '../../support/api.js';

const LIMIT = 5;

// Per-organization rate limits by plan: HERALD_PLANS=starter:5 allows 5 requests per second.
describe('rate limits', () => {
  let service: TestService;

  before(async () => {
    service = await startTestService({
      HERALD_ROLE: 'api',
      HERALD_DEFAULT_PLAN: 'starter',
      HERALD_PLANS: `starter:${LIMIT}`,
    });
  });
  after(async () => service?.stop());

  /**
   * Sends the requests one after another and returns the replies, retrying in a fresh window when a slow
   * machine spread them over more than one second (then the counts would prove nothing).
   */
  async function burst(requests: (() => Promise<Reply>)[]): Promise<Reply[]> {
    for (let tries = 0; tries < 5; tries++) {
      const started = Date.now();
      const replies: Reply[] = [];
      for (const send of requests) replies.push(await send());
      if (Date.now() - started < 900) return replies;
      await new Promise((resolve) => setTimeout(resolve, 1_100));
    }
    throw new Error(`could not send ${requests.length} requests within one second`);
  }

  test('the 6th request in a second gets 429 rate_limited with Retry-After; another organization is unaffected', async () => {
    const a = await bootstrap(service.url, 'Busy');
    const b = await bootstrap(service.url, 'Calm');
    const replies = await burst([
      ...Array.from({ length: LIMIT }, () => () => a.test.get('/api/v1/applications')),
      () => a.test.get('/api/v1/applications'),
      // Test and Live keys of one organization share its limit; writes count like reads.
      () => a.live.get('/api/v1/applications'),
      () => a.test.post('/api/v1/applications', { name: 'x' }),
      () => b.test.get('/api/v1/applications'),
    ]);
    assert.deepEqual(
      replies.slice(0, LIMIT).map((r) => r.status),
      Array(LIMIT).fill(200),
    );
    const limited = replies[LIMIT]!;
    assertError(limited, 429, 'rate_limited');
    assert.deepEqual(limited.body, {
      error: { code: 'rate_limited', message: 'Too many requests', request_id: limited.body.error.request_id },
    });
    const retryAfter = Number(limited.headers.get('retry-after'));
    assert.ok(
      Number.isInteger(retryAfter) && retryAfter >= 0 && retryAfter <= 1,
      `Retry-After ${limited.headers.get('retry-after')}`,
    );
    assertError(replies[LIMIT + 1]!, 429, 'rate_limited');
    assertError(replies[LIMIT + 2]!, 429, 'rate_limited');
    assert.equal(replies[LIMIT + 3]!.status, 200, 'another organization is not limited');
  });

  test('an organization on the unlimited plan is never limited', async () => {
    const org = await bootstrap(service.url, 'Unlimited');
    assert.ok(await service.store.organizations.setPlan(org.org.id, 'unlimited'));
    const replies = await Promise.all(Array.from({ length: 30 }, () => org.test.get('/api/v1/applications')));
    assert.deepEqual(
      replies.map((r) => r.status),
      Array(30).fill(200),
    );
  });

  test("a portal link has a limit of its own at its organization's rate: a customer cannot use up the organization's API", async () => {
    const org = await bootstrap(service.url, 'Portal');
    const app = (await org.test.post('/api/v1/applications', { name: 'portal' })).body;
    const other = (await org.test.post('/api/v1/applications', { name: 'other portal' })).body;
    const portal = new Client(service.url + app.portal_path);
    const otherPortal = new Client(service.url + other.portal_path);
    await new Promise((resolve) => setTimeout(resolve, 1_100)); // past the second that counted the creates
    const replies = await burst([
      ...Array.from({ length: LIMIT }, () => () => portal.get('/api/endpoints')),
      () => portal.get('/api/endpoints'),
      () => portal.post('/api/send-test', { event_type: 'invoice.paid' }),
      () => otherPortal.get('/api/endpoints'),
      () => org.test.get('/api/v1/applications'),
    ]);
    assert.deepEqual(
      replies.slice(0, LIMIT).map((r) => r.status),
      Array(LIMIT).fill(200),
    );
    assertError(replies[LIMIT]!, 429, 'rate_limited');
    assertError(replies[LIMIT + 1]!, 429, 'rate_limited');
    assert.equal(replies[LIMIT + 2]!.status, 200, "another application's link counts on its own");
    assert.equal(replies[LIMIT + 3]!.status, 200, "the organization's keys count on their own");
    // Links that open nothing spend a limit of the caller's address (the default plan's rate).
    const guesses = await burst(
      Array.from(
        { length: LIMIT + 1 },
        (_, i) => () => new Client(`${service.url}/portal/${String(i).repeat(43)}`).get('/api/endpoints'),
      ),
    );
    for (const reply of guesses.slice(0, LIMIT)) assertError(reply, 404, 'not_found');
    assertError(guesses[LIMIT]!, 429, 'rate_limited');
  });

  test("a portal page is not counted for a valid link; for a link that opens nothing it spends the caller's guesses", async () => {
    const org = await bootstrap(service.url, 'Portal page');
    const app = (await org.test.post('/api/v1/applications', { name: 'page' })).body;
    await new Promise((resolve) => setTimeout(resolve, 1_100)); // a fresh second for this caller's guesses
    const page = (path: string) => async (): Promise<Reply> => {
      const response = await fetch(service.url + path);
      return { status: response.status, headers: response.headers, body: await response.text() };
    };
    const valid = await burst(Array.from({ length: LIMIT + 3 }, () => page(app.portal_path)));
    assert.deepEqual(
      valid.map((r) => r.status),
      Array(LIMIT + 3).fill(200),
      'the page of a valid link',
    );
    const guesses = await burst(Array.from({ length: LIMIT + 1 }, (_, i) => page(`/portal/${String(i).repeat(43)}`)));
    assert.deepEqual(
      guesses.map((r) => r.status),
      [...Array(LIMIT).fill(404), 429],
      'pages of links that open nothing',
    );
  });

  test('revoking a key is never limited, so a leaked key that keeps the counter full can still be revoked', async () => {
    const org = await bootstrap(service.url, 'Leaked');
    const leaked = await org.test.post('/api/v1/api-keys', { name: 'leaked' });
    assert.equal(leaked.status, 201);
    const attacker = org.test.withKey(leaked.body.key);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const replies = await burst([
      ...Array.from({ length: LIMIT + 1 }, () => () => attacker.get('/api/v1/applications')),
      () => org.test.get('/api/v1/applications'),
      () => org.test.delete(`/api/v1/api-keys/${leaked.body.id}`),
      () => attacker.get('/api/v1/applications'),
    ]);
    assertError(replies[LIMIT]!, 429, 'rate_limited');
    assertError(replies[LIMIT + 1]!, 429, 'rate_limited');
    assert.equal(replies[LIMIT + 2]!.status, 200, 'the revocation goes through while the counter is full');
    assertError(replies[LIMIT + 3]!, 401, 'unauthorized');
  });

  test('unauthenticated requests get 401, not 429', async () => {
    const anonymous = (await bootstrap(service.url)).test.withKey('sk_test_unknown');
    for (let i = 0; i < LIMIT + 3; i++) assertError(await anonymous.get('/api/v1/applications'), 401, 'unauthorized');
  });
});

test('a Redis that is away: requests are served uncounted, with one warning in the log and nothing on stderr', {
  timeout: 30_000,
}, async (t) => {
  // A port with nothing listening: every connection to "Redis" is refused.
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));

  const stderr: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  const originalError = console.error;
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => (
    stderr.push(String(chunk)), (write as (...args: unknown[]) => boolean)(chunk, ...rest)
  )) as typeof process.stderr.write;
  console.error = (...args: unknown[]) => void stderr.push(args.map(String).join(' '));
  t.after(() => {
    process.stderr.write = write;
    console.error = originalError;
  });

  const lines: string[] = [];
  const service = await startTestService(
    {
      HERALD_ROLE: 'api',
      HERALD_DEFAULT_PLAN: 'starter',
      HERALD_PLANS: `starter:${LIMIT}`,
      HERALD_REDIS_URL: `redis://127.0.0.1:${port}`,
    },
    undefined,
    lines,
  );
  t.after(() => service.stop());
  const { test: api } = await bootstrap(service.url);
  for (let i = 0; i < LIMIT + 2; i++)
    assert.equal((await api.get('/api/v1/applications')).status, 200, 'not counted while Redis is away');
  await new Promise((resolve) => setTimeout(resolve, 2_000)); // ioredis retries meanwhile
  const warnings = lines.map((line) => JSON.parse(line)).filter((entry) => /Redis unreachable/.test(entry.msg));
  assert.equal(warnings.length, 1, 'one warning for the outage');
  assert.equal(warnings[0].level, 40);
  assert.deepEqual(
    stderr.filter((text) => /ioredis/i.test(text)),
    [],
    'nothing from ioredis on stderr',
  );
});
