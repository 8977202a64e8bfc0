import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { linearRegExp, UnsupportedPattern } from '../../../src/domain/linear-regexp.js';

// Tenants' patterns run on RE2 (re2js): the answers JavaScript's engine gives for what both can run, and
// patterns that backtrack exponentially in V8 finish at once.

test('patterns that backtrack exponentially in V8 answer at once', () => {
  for (const pattern of ['^(a+)+$', '^(a|a)*$', '^a*a*a*a*a*a*a*a*a*$', '^(\\w*)*$', '(x+x+)+y'])
    for (const length of [30, 100_000]) {
      const input = `${(pattern.includes('x') ? 'x' : 'a').repeat(length)}!`;
      assert.equal(linearRegExp(pattern, 'u').test(input), false, pattern);
    }
});

test('answers as JavaScript does on patterns both engines run', () => {
  const patterns = [
    '^[a-z]{3}$',
    '^\\d{3}-\\d{4}$',
    '^[^@\\s]+@[^@\\s]+\\.[a-z]+$',
    'ab|cd',
    '^(ab)+c?$',
    '^\\u00e9+$',
    '^.$',
    '[\\w-]+',
    '^\\p{Lu}\\p{Ll}+$',
  ];
  fc.assert(
    fc.property(fc.constantFrom(...patterns), fc.string({ unit: 'grapheme', maxLength: 12 }), (pattern, input) => {
      assert.equal(linearRegExp(pattern, 'u').test(input), new RegExp(pattern, 'u').test(input), `${pattern} ${input}`);
    }),
    { numRuns: 2_000 },
  );
  for (const [pattern, input] of [
    ['^\\u00e9+$', 'ééé'],
    ['^.$', '😀'],
    ['^\\p{Lu}\\p{Ll}+$', 'Émile'],
  ] as const)
    assert.equal(linearRegExp(pattern, 'u').test(input), true, pattern);
});

test('back-references and lookaround are refused, not read as literals', () => {
  for (const pattern of ['(a)\\1', '(?<n>a)\\k<n>', '(?=a)', '(?!a)', '(?<=a)b', '(?<!a)b', '(?<n>x)\\k<n>'])
    assert.throws(() => linearRegExp(pattern), UnsupportedPattern, pattern);
  // Inside a character class `(?=` is three characters, and `(?<name>` is a group name, not lookbehind.
  assert.equal(linearRegExp('^[(?=]+$').test('(?='), true);
  assert.equal(linearRegExp('^(?<year>\\d{4})$').test('2026'), true);
  assert.throws(() => linearRegExp('(['), UnsupportedPattern);
});
