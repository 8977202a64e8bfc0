import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lifetimeOf, MAX_TOKEN_LIFETIME_MS } from '../../../src/delivery/oauth-tokens.js';

// How long an OAuth2 token is kept, from the token server's `expires_in`: a positive number of seconds,
// at most a day; anything else is the five-minute default.

test('expires_in is taken in seconds up to a day; huge, negative, NaN and non-numbers are bounded', () => {
  const DEFAULT = 5 * 60_000;
  assert.equal(lifetimeOf(3600), 3_600_000);
  assert.equal(lifetimeOf('3599'), 3_599_000, 'a quoted number of seconds');
  assert.equal(lifetimeOf(0.5), 500);
  assert.equal(MAX_TOKEN_LIFETIME_MS, 86_400_000);
  for (const huge of [1e306, Number.MAX_VALUE, 86_401, '99999999999'])
    assert.equal(lifetimeOf(huge), MAX_TOKEN_LIFETIME_MS);
  for (const unusable of [
    undefined,
    null,
    0,
    -1,
    -1e306,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    '',
    'soon',
    '1e306',
    '-5',
    true,
    [60],
    { s: 60 },
  ])
    assert.equal(lifetimeOf(unusable), DEFAULT, JSON.stringify(unusable));
});
