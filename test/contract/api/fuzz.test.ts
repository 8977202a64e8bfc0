import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fuzz, startWorld, type World } from '../../support/fuzz.js';
import { Client } from '../../support/client.js';
import { assertError } from '../../support/api.js';

// A fixed-seed bounded run of the OpenAPI fuzzer (test/support/fuzz.ts states its invariants); longer runs
// with other seeds: npm run fuzz -- --runs N --seed S.
describe('API fuzzing from the OpenAPI document', () => {
  let world: World;

  before(async () => {
    world = await startWorld();
  });
  after(async () => world?.stop());

  test('every operation documents 400, and those that take a body 413 and 415 (answered before any handler)', async () => {
    for (const { method, path, op } of world.operations) {
      const statuses = Object.keys(op.responses);
      assert.ok(statuses.includes('400'), `${method} ${path} documents 400`);
      if (method !== 'GET')
        for (const status of ['413', '415'])
          assert.ok(statuses.includes(status), `${method} ${path} documents ${status}`);
    }
    const [caller] = world.scopes;
    const compressed = await caller!.client.request('POST', '/api/v1/api-keys', '{}', { 'content-encoding': 'gzip' });
    assertError(compressed, 415, 'invalid_request', /Content-Encoding gzip/);
    const odd = await new Client(world.service.url).get('/api/v1/openapi.json?x=a%00b');
    assertError(odd, 400, 'invalid_request');
  });

  test('a body that is not UTF-8 is refused, not stored as U+FFFD', async () => {
    const [caller] = world.scopes;
    const body = Buffer.concat([Buffer.from('{"name":"a'), Buffer.from([0xff, 0xfe]), Buffer.from('b"}')]);
    const reply = await fetch(`${world.service.url}/api/v1/applications`, {
      method: 'POST',
      headers: { authorization: `Bearer ${caller!.client.key}`, 'content-type': 'application/json' },
      body,
    });
    assert.equal(reply.status, 400);
    assert.match(((await reply.json()) as { error: { message: string } }).error.message, /not valid UTF-8/);
    const names = (await caller!.client.get('/api/v1/applications?limit=250')).body.data.map((a: any) => a.name);
    assert.ok(!names.some((name: string) => name.includes('\ufffd')));
  });

  test('generated requests to every operation hold the invariants', { timeout: 120_000 }, async () => {
    const result = await fuzz(world, { numRuns: 1000, seed: 26 });
    assert.equal(
      result.failed,
      false,
      `seed ${result.seed}, path ${result.counterexamplePath}: ${result.errorInstance}`,
    );
  });
});
