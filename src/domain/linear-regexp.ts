import { RE2JS } from 're2js';

// Patterns that tenants write (`pattern` and `patternProperties` in event schemas) run on RE2JS, a pure
// JavaScript port of RE2: it matches in time linear in the input whatever the pattern, where V8's
// backtracking engine can take exponential time (`^(a+)+$` against 30 `a`s and a `!`). RE2 has no
// back-references and no lookaround, because those need backtracking: such patterns are refused.

/** What ajv's `code.regExp` option is given: the part of a RegExp that validation uses. */
export interface LinearRegExp {
  test(input: string): boolean;
  toString(): string;
}

/** Why a pattern cannot run on the linear-time engine. */
export class UnsupportedPattern extends Error {}

/**
 * A JSON Schema (ECMAScript) pattern compiled for RE2. `flags` is ajv's: `u` or empty; both read a
 * string by code points here, as RE2 does. Throws UnsupportedPattern for what RE2 cannot express.
 */
export function linearRegExp(pattern: string, flags = ''): LinearRegExp {
  const refused = backtrackingOnly(pattern);
  if (refused) throw new UnsupportedPattern(`pattern ${JSON.stringify(pattern)} uses ${refused}`);
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(RE2JS.translateRegExp(pattern));
  } catch (error) {
    throw new UnsupportedPattern(
      `pattern ${JSON.stringify(pattern)} cannot run on a linear-time (RE2) engine: ${(error as Error).message}`,
    );
  }
  const text = `/${pattern}/${flags}`;
  return { test: (input) => compiled.test(input), toString: () => text };
}
// ajv writes the engine into standalone validator code as this expression (compile-thread.ts resolves it).
linearRegExp.code = 'require("herald:linear-regexp").linearRegExp';

/**
 * The backtracking-only construct a pattern uses, or null: a back-reference (`\1`, `\k<name>`), which
 * RE2's translation would otherwise turn into a literal, or lookaround. Character classes are skipped,
 * since `\1` inside one is an octal escape, not a reference.
 */
function backtrackingOnly(pattern: string): string | null {
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\') {
      const next = pattern[i + 1] ?? '';
      if (!inClass && /[1-9]/.test(next)) return 'a back-reference (\\1 to \\9), which needs a backtracking engine';
      if (!inClass && next === 'k' && pattern[i + 2] === '<')
        return 'a named back-reference (\\k<…>), which needs a backtracking engine';
      i++;
    } else if (inClass) {
      if (c === ']') inClass = false;
    } else if (c === '[') {
      inClass = true;
    } else if (c === '(' && pattern[i + 1] === '?' && /^(=|!|<=|<!)/.test(pattern.slice(i + 2, i + 4))) {
      return 'lookaround ((?=, (?!, (?<=, (?<!), which needs a backtracking engine';
    }
  }
  return null;
}
