import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, type Client } from '../../support/client.js';
import { parseMetrics } from '../../support/scrape.js';
import { assertError, createApp, emit } from '../../support/api.js';
import { loopProbe, TRIES } from '../../support/loop-probe.js';
import { MAX_SCHEMA_CHARS } from '../../../src/domain/event-schema.js';

// One tenant's event schema cannot stall the API process that every tenant shares: creating the most
// costly schema the size limit allows, and emitting payloads crafted against a schema, keep the event
// loop answering; schemas that could never finish validating are refused; no request answers 500.

/**
 * The longest the event loop may be held while hostile schemas and payloads are handled: what they cost
 * unbounded is seconds; the margin over a few tens of milliseconds is for the rest of the suite, which
 * runs beside this file on two cores.
 */
const MAX_LOOP_DELAY_MS = 200;
/** A schema of many properties, each an `anyOf` with a format: about 5 ms of ajv's compile per property. */
function costlySchema(properties: number, prefix = 'p'): object {
  const props: Record<string, object> = {};
  for (let i = 0; i < properties; i++)
    props[`${prefix}${i}`] = { anyOf: [{ type: 'string', format: 'email' }, { type: 'integer' }] };
  return { type: 'object', properties: props };
}

describe('hostile event schemas', () => {
  let service: TestService;
  let api: Client;
  let appId: string;
  const { staysResponsive } = loopProbe(() => service.url, MAX_LOOP_DELAY_MS);

  before(async () => {
    // These check the event loop, not the compile deadline (test/unit/domain/event-schema.test.ts does): a
    // long one keeps a busy machine's slow compiles from being refused.
    service = await startTestService({ HERALD_ROLE: 'api', HERALD_SCHEMA_COMPILE_DEADLINE: '120s' });
    ({ test: api } = await bootstrap(service.url));
    appId = (await createApp(api)).id;
  });
  after(async () => service?.stop());

  const refused = async (payload: unknown, eventType: string, message: RegExp) =>
    assertError(
      await api.post('/api/v1/messages', { app_id: appId, event_type: eventType, payload }),
      400,
      'invalid_request',
      message,
    );

  test('a catastrophic pattern under a property named "enum" runs in linear time, at create and at emit', async () => {
    const patterns = ['^(a+)+$', '^(a|a)*$', '^a*a*a*a*a*a*a*a*$'];
    await staysResponsive('catastrophic patterns', async (round) => {
      for (const [i, pattern] of patterns.entries()) {
        const name = `hostile.pattern${i}.r${round}`;
        const schema = { type: 'object', properties: { enum: { type: 'string', pattern } } };
        // An example that triggers the pattern is refused at create, at once.
        assertError(
          await api.post('/api/v1/event-types', { name, schema, example_json: { enum: `${'a'.repeat(40)}!` } }),
          400,
          'invalid_request',
          /example_json\/enum.*must match pattern/,
        );
        const created = await api.post('/api/v1/event-types', { name, schema, example_json: { enum: 'aaa' } });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        for (const length of [26, 40, 100_000])
          await refused({ enum: `${'a'.repeat(length)}!` }, name, /payload\/enum.*must match pattern/);
        await emit(api, appId, name, { enum: 'a'.repeat(100_000) });
      }
    });
  });

  test('uniqueItems over an unbounded array is refused wherever it sits, also under a property named "enum"', async () => {
    for (const key of ['enum', 'const', 'default', 'examples', 'example'])
      assertError(
        await api.post('/api/v1/event-types', {
          name: `hostile.unique.${key}`,
          schema: { type: 'object', properties: { [key]: { type: 'array', uniqueItems: true } } },
        }),
        400,
        'invalid_request',
        new RegExp(`schema/properties/${key}/uniqueItems needs maxItems`),
      );
    // Bounded by maxItems, it is accepted, and a payload past the bound fails before any comparison.
    const bounded = await api.post('/api/v1/event-types', {
      name: 'hostile.unique.bounded',
      schema: { type: 'object', properties: { enum: { type: 'array', uniqueItems: true, maxItems: 100 } } },
    });
    assert.equal(bounded.status, 201, JSON.stringify(bounded.body));
    await staysResponsive('uniqueItems over 20,000 objects', async () =>
      refused(
        { enum: Array.from({ length: 20_000 }, (_, i) => ({ i })) },
        'hostile.unique.bounded',
        /must NOT have more than 100 items/,
      ),
    );
  });

  test('self-references are refused at create with 400, never 500; references that descend are allowed', async () => {
    const loops: object[] = [
      { $ref: '#' },
      // biome-ignore lint/suspicious/noThenProperty: `then` is a JSON Schema keyword here
      { if: { type: 'object' }, then: { $ref: '#' } },
      { $defs: { a: { $ref: '#/$defs/b' }, b: { allOf: [{ $ref: '#/$defs/a' }] } }, $ref: '#/$defs/a' },
      { $id: 'https://example.com/s', $defs: { x: { $anchor: 'x', anyOf: [{ $ref: '#x' }] } }, $ref: '#x' },
      { properties: { enum: { not: { $ref: '#/properties/enum' } } } },
    ];
    for (const schema of loops) {
      const reply = await api.post('/api/v1/event-types', { name: 'hostile.loop', schema });
      assertError(reply, 400, 'invalid_request', /refers back to itself without descending into the payload/);
      assertError(await api.patch('/api/v1/event-types/invoice.paid', { schema }), 400, 'invalid_request');
    }
    assertError(
      await api.post('/api/v1/event-types', {
        name: 'hostile.loop',
        schema: { enum: [{ $ref: '#' }], $ref: '#/enum/0' },
      }),
      400,
      'invalid_request',
      /points into "enum"/,
    );
    assertError(await api.get('/api/v1/event-types/hostile.loop'), 404, 'not_found');

    // A tree refers to itself through its children: it validates, and a deep payload is an answer, not a 500.
    const tree = { type: 'object', properties: { kids: { type: 'array', items: { $ref: '#' } } } };
    assert.equal((await api.post('/api/v1/event-types', { name: 'tree.made', schema: tree })).status, 201);
    await emit(api, appId, 'tree.made', { kids: [{ kids: [{ kids: [] }] }] });
    await refused({ kids: [{ kids: [7] }] }, 'tree.made', /payload\/kids\/0\/kids\/0 .*must be object/);
    let deep: unknown = { kids: [] };
    for (let i = 0; i < 45; i++) deep = { kids: [deep] };
    await emit(api, appId, 'tree.made', deep as object);
  });

  test('a schema whose references branch at every level is stopped by the validation budget, quickly', async () => {
    const schema = {
      type: 'object',
      properties: { list: { $ref: '#/$defs/list' } },
      $defs: { list: { type: 'array', items: { anyOf: [{ $ref: '#/$defs/list' }, { $ref: '#/$defs/list' }] } } },
    };
    const branch = await api.post('/api/v1/event-types', { name: 'hostile.branch', schema });
    assert.equal(branch.status, 201, JSON.stringify(branch.body));
    // 2^40 applications if left to run.
    const payload = { list: JSON.parse(`${'['.repeat(40)}1${']'.repeat(40)}`) };
    await staysResponsive('branching references', () =>
      refused(payload, 'hostile.branch', /cannot be checked against the schema within the limits/),
    );
    // Alternatives that each walk a long array are stopped too.
    const alternatives = Array.from({ length: 600 }, (_, i) => ({
      type: 'array',
      items: { type: 'integer' },
      contains: { const: `x${i}` },
    }));
    const walk = await api.post('/api/v1/event-types', {
      name: 'hostile.walk',
      schema: { type: 'object', properties: { list: { anyOf: alternatives } } },
    });
    assert.equal(walk.status, 201, JSON.stringify(walk.body));
    await staysResponsive('alternatives that each walk 20,000 items', async () => {
      const reply = await api.post('/api/v1/messages', {
        app_id: appId,
        event_type: 'hostile.walk',
        payload: { list: Array.from({ length: 20_000 }, () => 1) },
      });
      // Refused either way: by the budget, or by the schema if this machine checked it all in time.
      assertError(reply, 400, 'invalid_request', /within the limits|must match a schema in anyOf/);
    });
  });

  test('a schema that takes ajv seconds to compile is compiled off the event loop, once', async () => {
    // About a second to compile on this machine alone: well inside the compile deadline this service has while the
    // rest of the suite runs beside it, and long enough that compiling it on the event loop would show.
    assert.ok(JSON.stringify(costlySchema(300, `p${'r'.repeat(TRIES - 1)}`)).length <= MAX_SCHEMA_CHARS);
    const scrape = async () => parseMetrics(await (await fetch(`${service.url}/metrics`)).text());
    const compiledBefore = (await scrape()).value('herald_event_schema_compilations_total');
    let rounds = 0;
    await staysResponsive('creating a costly schema', async (round) => {
      rounds++;
      // Another schema each round (its own property names): one kept already would compile nothing.
      const name = `costly.one.r${round}`;
      const prefix = `p${'r'.repeat(round)}`;
      const created = await api.post('/api/v1/event-types', { name, schema: costlySchema(300, prefix) });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      await emit(api, appId, name, { [`${prefix}1`]: 'a@example.com', [`${prefix}2`]: 3 });
      await refused(
        { [`${prefix}1`]: 'not an email' },
        name,
        new RegExp(`payload/${prefix}1 \\(at /${prefix}1\\) must match format "email"`),
      );
      // The same schema again compiles nothing more.
      assert.equal(
        (await api.post('/api/v1/event-types', { name: `${name}.again`, schema: costlySchema(300, prefix) })).status,
        201,
      );
      await emit(api, appId, `${name}.again`, { [`${prefix}1`]: 'b@example.com' });
    });
    const after = await scrape();
    assert.equal(
      after.value('herald_event_schema_compilations_total'),
      compiledBefore + rounds,
      'each schema compiled once',
    );
    assert.ok(after.value('herald_event_schema_validators_bytes') > 0);
  });

  test('patterns the linear-time engine cannot run are 400 at create, naming the place', async () => {
    for (const [pattern, message] of [
      ['(?=a)a', /properties\/x\/pattern: .*lookaround/],
      ['(?<!a)b', /properties\/x\/pattern: .*lookaround/],
      ['(a)\\1', /properties\/x\/pattern: .*back-reference/],
      ['(?<n>a)\\k<n>', /properties\/x\/pattern: .*named back-reference/],
    ] as const)
      assertError(
        await api.post('/api/v1/event-types', {
          name: 'hostile.regex',
          schema: { type: 'object', properties: { x: { type: 'string', pattern } } },
        }),
        400,
        'invalid_request',
        message,
      );
    assertError(
      await api.post('/api/v1/event-types', {
        name: 'hostile.regex',
        schema: { type: 'object', patternProperties: { '^(?!x)': { type: 'string' } } },
      }),
      400,
      'invalid_request',
      /patternProperties: .*lookaround/,
    );
  });
});

describe('schema limits per environment and per process', () => {
  test('at most HERALD_MAX_EVENT_TYPES event types per environment: 409 past it, other environments unaffected', async (t) => {
    const service = await startTestService({ HERALD_ROLE: 'api', HERALD_MAX_EVENT_TYPES: '5' });
    t.after(() => service.stop());
    const { test: api, live } = await bootstrap(service.url);
    const have = (await api.get('/api/v1/event-types?limit=250')).body.data.length;
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => api.post('/api/v1/event-types', { name: `capped.e${i}` })),
    );
    assert.equal(results.filter((r) => r.status === 201).length, 5 - have, 'concurrent creates stop at the cap');
    for (const r of results.filter((r) => r.status !== 201)) assertError(r, 409, 'conflict', /HERALD_MAX_EVENT_TYPES/);
    assert.equal((await api.get('/api/v1/event-types?limit=250')).body.data.length, 5);
    assert.equal((await live.post('/api/v1/event-types', { name: 'capped.live' })).status, 201);
  });

  test('compiled validators are kept within HERALD_SCHEMA_CACHE_MB bytes, and evicted ones compile again', async (t) => {
    const service = await startTestService({
      HERALD_ROLE: 'api',
      HERALD_SCHEMA_CACHE_MB: '2',
      HERALD_SCHEMA_COMPILE_DEADLINE: '120s',
    });
    t.after(() => service.stop());
    const { test: api } = await bootstrap(service.url);
    const appId = (await createApp(api)).id;
    const scrape = async () => parseMetrics(await (await fetch(`${service.url}/metrics`)).text());
    // Each about 0.7 MB compiled: three fit in 2 MB, twelve do not.
    const names = Array.from({ length: 12 }, (_, i) => `kept.e${i}`);
    for (const [i, name] of names.entries()) {
      const schema = costlySchema(160 + i);
      const created = await api.post('/api/v1/event-types', { name, schema });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const kept = (await scrape()).value('herald_event_schema_validators_bytes');
      assert.ok(kept > 0 && kept <= 2 * 1024 * 1024, `kept ${kept} bytes`);
    }
    const before = (await scrape()).value('herald_event_schema_compilations_total');
    for (const name of names) await emit(api, appId, name, { p1: 'a@example.com' });
    const after = await scrape();
    assert.ok(after.value('herald_event_schema_compilations_total') > before, 'evicted validators compiled again');
    assert.ok(after.value('herald_event_schema_validators_bytes') <= 2 * 1024 * 1024);
  });
});
