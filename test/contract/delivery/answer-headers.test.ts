import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, startReceiver } from '../../support/delivery.js';

// The receiver's answer's headers as an attempt keeps them (issue 42, finding 9): names such as
// `__proto__` and `constructor` are plain data, read back as the strings that came, and one long value is
// cut (ending in "…") instead of pushing out the headers after it. The long value stays under the 16 KB of
// answer headers undici reads.

test("an answer's headers named __proto__, constructor and toString read back as the strings that came", async (t) => {
  const s = await setup(t);
  const receiver = await startReceiver(t, () => ({
    status: 200,
    headers: ['__proto__', 'p', 'constructor', 'c', 'toString', 't', 'X-Long', 'v'.repeat(10 * 1024), 'X-After', 'a'],
    body: 'ok',
  }));
  await s.endpoint(`${receiver.url}/hook`);
  const { deliveryIds } = await s.emit({ n: 1 });
  const delivery = await s.until(deliveryIds[0]!, (d) => d.attempts.length === 1, 'the attempt recorded');
  const raw = await s.api.get(`/api/v1/deliveries/${delivery.id}`);
  const headers = raw.body.attempts[0].response_headers as Record<string, unknown>;
  for (const [name, value] of <[string, string][]>[
    ['__proto__', 'p'],
    ['constructor', 'c'],
    ['tostring', 't'],
    ['x-after', 'a'],
  ])
    assert.ok(Object.hasOwn(headers, name) && headers[name] === value, `${name}: ${JSON.stringify(headers[name])}`);
  assert.equal(headers['x-long'], `${'v'.repeat(1_024)}…`);
});
