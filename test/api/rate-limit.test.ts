import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from '../support/service.js';
import { bootstrap, Client, type Reply } from '../support/client.js';
import { assertError } from './helpers.js';

const LIMIT = 5;

// Per-organization rate limits by plan: HERALD_PLANS=starter:5 allows 5 requests per second.
describe('rate limits', () => {
  let service: TestService;

  before(async () => {
    service = await startTestService({ HERALD_ROLE: 'api', HERALD_DEFAULT_PLAN: 'starter', HERALD_PLANS: `starter:${LIMIT}` });
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
    assert.deepEqual(replies.slice(0, LIMIT).map((r) => r.status), Array(LIMIT).fill(200));
    const limited = replies[LIMIT]!;
    assertError(limited, 429, 'rate_limited');
    assert.deepEqual(limited.body, { error: { code: 'rate_limited', message: 'Too many requests', request_id: limited.body.error.request_id } });
    const retryAfter = Number(limited.headers.get('retry-after'));
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 0 && retryAfter <= 1, `Retry-After ${limited.headers.get('retry-after')}`);
    assertError(replies[LIMIT + 1]!, 429, 'rate_limited');
    assertError(replies[LIMIT + 2]!, 429, 'rate_limited');
    assert.equal(replies[LIMIT + 3]!.status, 200, 'another organization is not limited');
  });

  test('an organization on the unlimited plan is never limited', async () => {
    const org = await bootstrap(service.url, 'Unlimited');
    assert.ok(await service.store.organizations.setPlan(org.org.id, 'unlimited'));
    const replies = await Promise.all(Array.from({ length: 30 }, () => org.test.get('/api/v1/applications')));
    assert.deepEqual(replies.map((r) => r.status), Array(30).fill(200));
  });

  test("a portal link spends its organization's limit, shared with the organization's keys", async () => {
    const org = await bootstrap(service.url, 'Portal');
    const app = (await org.test.post('/api/v1/applications', { name: 'portal' })).body;
    const portal = new Client(service.url + app.portal_path);
    await new Promise((resolve) => setTimeout(resolve, 1_100)); // past the second that counted the create
    const replies = await burst([
      ...Array.from({ length: LIMIT - 1 }, () => () => portal.get('/api/endpoints')),
      () => org.test.get('/api/v1/applications'),
      () => portal.get('/api/endpoints'),
      () => portal.post('/api/send-test', { event_type: 'invoice.paid' }),
    ]);
    assert.deepEqual(replies.slice(0, LIMIT).map((r) => r.status), Array(LIMIT).fill(200));
    assertError(replies[LIMIT]!, 429, 'rate_limited');
    assertError(replies[LIMIT + 1]!, 429, 'rate_limited');
    // Links that open nothing spend a limit of the caller's address (the default plan's rate).
    const guesses = await burst(Array.from({ length: LIMIT + 1 }, (_, i) => () => new Client(`${service.url}/portal/${String(i).repeat(43)}`).get('/api/endpoints')));
    for (const reply of guesses.slice(0, LIMIT)) assertError(reply, 404, 'not_found');
    assertError(guesses[LIMIT]!, 429, 'rate_limited');
  });

  test('unauthenticated requests get 401, not 429', async () => {
    const anonymous = (await bootstrap(service.url)).test.withKey('sk_test_unknown');
    for (let i = 0; i < LIMIT + 3; i++) assertError(await anonymous.get('/api/v1/applications'), 401, 'unauthorized');
  });
});
