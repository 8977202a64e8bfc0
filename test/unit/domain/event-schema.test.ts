import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { SchemaCompiler, SchemaRefused } from '../../../src/event-schemas/compiler.js';
import { schemaFailure } from '../../../src/domain/event-schema.js';

// Validators compiled on the compile thread (standalone code, re2js patterns, budgeted formats and steps)
// answer as ajv compiled the usual way does, on every keyword an event schema may use.

const compiler = new SchemaCompiler(64 * 1024 * 1024);
after(() => compiler.close());

const plainAjv = new Ajv2020({ strict: false, allErrors: false, logger: false });
(addFormats as unknown as (ajv: Ajv2020) => void)(plainAjv);

/** Uses each ajv runtime helper (ucs2length, equal, uri) and the keyword families of 2020-12. */
const SCHEMA = {
  $id: 'https://example.com/order',
  type: 'object',
  required: ['id'],
  properties: {
    id: { type: 'string', minLength: 2, maxLength: 6, pattern: '^[a-z]+[0-9]*$' },
    email: { type: 'string', format: 'email' },
    site: { type: 'string', format: 'uri' },
    at: { type: 'string', format: 'date-time' },
    n: { type: 'number', multipleOf: 0.5, exclusiveMaximum: 100 },
    kind: { enum: ['a', 'b', { c: 1 }] },
    fixed: { const: { x: [1, 2] } },
    tags: { type: 'array', uniqueItems: true, maxItems: 5, items: { type: 'object' } },
    list: { type: 'array', prefixItems: [{ type: 'integer' }], items: { type: 'string' }, contains: { const: 'z' } },
    child: { $ref: '#node' },
  },
  patternProperties: { '^x-[a-z]+$': { type: 'integer' } },
  propertyNames: { maxLength: 8 },
  dependentSchemas: { email: { required: ['site'] } },
  if: { properties: { kind: { const: 'a' } }, required: ['kind'] },
  // biome-ignore lint/suspicious/noThenProperty: `then` is a JSON Schema keyword here
  then: { required: ['n'] },
  else: { not: { required: ['n'] } },
  unevaluatedProperties: false,
  $defs: {
    node: { $anchor: 'node', type: 'object', properties: { child: { $ref: '#node' }, v: { type: 'boolean' } } },
  },
};

const valueArb = fc.oneof(
  fc.constantFrom('a', 'ab1', 'AB', 'abcdefg', 'a@b.co', 'nope', 'https://x.io/p', '2026-11-27T10:00:00Z', 'z'),
  fc.constantFrom(1, 1.5, 2.25, 100, -3, true, null),
  fc.constant({ c: 1 }),
  fc.constant({ x: [1, 2] }),
  fc.constant([{ a: 1 }, { a: 1 }]),
  fc.constant([1, 'z']),
  fc.constant([1, 2]),
  fc.constant({ child: { v: true } }),
  fc.constant({ child: { child: { v: 'x' } } }),
);
// Most payloads carry an `id` (which the schema requires), so that valid ones come up often.
const payloadArb = fc
  .tuple(
    fc.option(fc.constantFrom('ab1', 'abc', 'AB', 'abcdefg'), { freq: 4 }),
    fc.dictionary(
      fc.constantFrom(
        'email',
        'site',
        'at',
        'n',
        'kind',
        'fixed',
        'tags',
        'list',
        'child',
        'x-ab',
        'x-1',
        'longer-name',
      ),
      valueArb,
      { maxKeys: 4 },
    ),
  )
  .map(([id, rest]) => (id === null ? rest : { id, ...rest }));

test('compiled off the event loop, a validator answers as ajv does, on every keyword family', async () => {
  const ours = await compiler.validator(JSON.stringify(SCHEMA));
  const theirs = plainAjv.compile(SCHEMA);
  let valid = 0;
  fc.assert(
    fc.property(payloadArb, (payload) => {
      const expected = theirs(payload);
      const failure = schemaFailure(ours, payload, 'payload', JSON.stringify(payload).length);
      assert.equal(failure === null, expected, `${JSON.stringify(payload)}: ${failure}`);
      if (expected) valid++;
    }),
    { numRuns: 3_000 },
  );
  assert.ok(valid > 0, 'some payloads were valid');
  for (const payload of [{ id: 'ab1' }, { id: 'ab1', kind: 'a', n: 1.5 }, { id: 'ab', child: { child: { v: true } } }])
    assert.equal(schemaFailure(ours, payload, 'payload', 50), null, JSON.stringify(payload));
});

test('the same schema text compiles once; a refused one says why', async () => {
  const text = JSON.stringify({ type: 'object', properties: { a: { type: 'string', minLength: 1 } } });
  const before = compiler.stats().compilations;
  const [first, second] = await Promise.all([compiler.validator(text), compiler.validator(text)]);
  assert.equal(first, second);
  assert.equal(await compiler.validator(text), first);
  assert.equal(compiler.stats().compilations, before + 1);
  await assert.rejects(compiler.validator(JSON.stringify({ $ref: '#' })), SchemaRefused);
  await assert.rejects(compiler.validator(JSON.stringify({ type: 'nope' })), SchemaRefused);
});

test('a schema past the compile deadline is refused, and the thread that ran it gives way to a fresh one', async () => {
  const props: Record<string, object> = {};
  for (let i = 0; i < 850; i++) props[`p${i}`] = { anyOf: [{ type: 'string', format: 'email' }, { type: 'integer' }] };
  const slowSchema = JSON.stringify({ properties: props });
  // The deadline is a fifth of what this schema takes on this machine now, measured with room to spare, so
  // the schema misses it on a machine of any speed. A fresh thread's start does not count against it.
  const roomy = new SchemaCompiler(64 * 1024 * 1024, 120_000);
  const began = performance.now();
  await roomy.validator(slowSchema).finally(() => roomy.close());
  const deadlineMs = Math.max(1, Math.floor((performance.now() - began) / 5));

  const slow = new SchemaCompiler(64 * 1024 * 1024, deadlineMs);
  try {
    await assert.rejects(slow.validator(slowSchema), new RegExp(`more than ${deadlineMs} ms to check and compile`));
    const validate = await slow.validator(JSON.stringify({ type: 'integer' }));
    assert.equal(validate(3), true);
    assert.equal(validate('3'), false);
    assert.equal(slow.stats().compilations, 2);
  } finally {
    await slow.close();
  }
});
