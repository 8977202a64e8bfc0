import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, Client } from '../../support/client.js';
import { assertError } from '../../support/api.js';

// HERALD_AUTH_FAILURE_LIMIT: failed authentications per client address per second. Past it the address is
// answered 429 (with Retry-After) without its keys being looked up, so a flood of guessed keys costs no
// database lookup each; keys the process issued or found lately still pass.
describe('failed authentications per client address', () => {
  const LIMIT = 5;
  let service: TestService;
  let lookups = 0;

  before(async () => {
    service = await startTestService({ HERALD_ROLE: 'api', HERALD_AUTH_FAILURE_LIMIT: String(LIMIT) });
    const organizations = service.store.organizations;
    const lookup = organizations.readKeyOwner;
    organizations.readKeyOwner = async (...args: Parameters<typeof lookup>) => (lookups++, lookup(...args));
  });
  after(async () => service?.stop());

  const guess = (i: number) => new Client(service.url, `sk_test_guess${String(i).padStart(28, '0')}${Date.now()}`);
  const waitOutWindow = () => new Promise((resolve) => setTimeout(resolve, 1_100));

  test('past the limit wrong keys are 429 with Retry-After and are not looked up; a valid key still works', async () => {
    const { test: valid } = await bootstrap(service.url);
    assert.equal((await valid.get('/api/v1/applications')).status, 200);
    await waitOutWindow();
    const k = 4;
    lookups = 0;
    for (let i = 0; i < LIMIT; i++)
      assertError(await guess(i).get('/api/v1/applications'), 401, 'unauthorized', /Invalid or revoked/);
    assert.equal(lookups, LIMIT, 'each of the first wrong keys is looked up');
    for (let i = LIMIT; i < LIMIT + k; i++) {
      const reply = await guess(i).get('/api/v1/applications');
      assertError(reply, 429, 'rate_limited', /failed authentications/);
      assert.equal(reply.headers.get('retry-after'), '1');
    }
    assert.equal(lookups, LIMIT, 'the wrong keys past the limit are not looked up');
    // A valid key from the same address is not limited (its first request past the cache is one lookup).
    for (let i = 0; i < 3; i++) assert.equal((await valid.get('/api/v1/applications')).status, 200);
    assert.equal((await valid.post('/api/v1/applications', { name: 'Still here' })).status, 201);
    // So is a key this process issued and no one has used yet.
    const { live: fresh } = await bootstrap(service.url, 'Fresh');
    assert.equal((await fresh.get('/api/v1/applications')).status, 200);
    assertError(await guess(LIMIT + k).get('/api/v1/applications'), 429, 'rate_limited');
    assert.equal(lookups, LIMIT + 1, 'only the fresh key was looked up');
    // The window ends a second after the first failure: wrong keys are answered 401 again.
    await waitOutWindow();
    lookups = 0;
    assertError(await guess(100).get('/api/v1/applications'), 401, 'unauthorized');
    assert.equal(lookups, 1);
  });

  test('valid keys never count as failures, and another address is not limited by this one', async () => {
    const { test: valid } = await bootstrap(service.url);
    await waitOutWindow();
    for (let i = 0; i < LIMIT * 3; i++) assert.equal((await valid.get('/api/v1/applications')).status, 200);
    for (let i = 0; i < LIMIT; i++) assertError(await guess(i).get('/api/v1/applications'), 401, 'unauthorized');
    assertError(await guess(LIMIT).get('/api/v1/applications'), 429, 'rate_limited');
    // Linux routes all of 127/8 to loopback: 127.0.0.2 is another client address.
    const status = await new Promise<number>((resolve, reject) => {
      const url = `${service.url}/api/v1/applications`;
      const headers = { authorization: 'Bearer sk_test_another_address_guess_0000000000' };
      request(url, { localAddress: '127.0.0.2', headers }, (response) => {
        response.resume();
        resolve(response.statusCode!);
      })
        .on('error', reject)
        .end();
    });
    assert.equal(status, 401);
  });
});
