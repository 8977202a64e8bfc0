import { createRequire } from 'node:module';
import { Script } from 'node:vm';
import type { PayloadValidator } from '../domain/event-schema.js';
import { linearRegExp } from '../domain/linear-regexp.js';
import { formats } from '../domain/schema-formats.js';
import { spend } from '../domain/validation-budget.js';

// A compiled validator travels as code: the compile thread turns a schema into ajv's standalone source
// (event-schema.ts, validatorSource) and V8's compiled form of it, and the event loop loads both, which
// costs milliseconds where compiling costs up to seconds. The source may `require` ajv's runtime helpers
// and Herald's pattern engine, formats and budget under `herald:` names; anything else is refused, so
// the code that runs is ajv's generated code and these modules only.

const nodeRequire = createRequire(import.meta.url);

const HERALD_MODULES: Record<string, unknown> = {
  'herald:linear-regexp': { linearRegExp },
  'herald:schema-formats': { formats },
  'herald:validation-budget': { spend },
};

/** ajv's runtime helpers that JSON Schema validators use (the others serve JSON Type Definition). */
const AJV_RUNTIME = new Set(
  ['equal', 'ucs2length', 'uri', 'validation_error'].map((helper) => `ajv/dist/runtime/${helper}`),
);

export function validatorRequire(name: string): unknown {
  if (Object.hasOwn(HERALD_MODULES, name)) return HERALD_MODULES[name];
  if (AJV_RUNTIME.has(name)) return nodeRequire(name);
  throw new Error(`a compiled event schema may not load ${name}`);
}

/** A validator's module body wrapped into a function of (module, exports, require): the code that is loaded. */
export const wrapValidatorSource = (source: string) => `(function (module, exports, require) {${source}\n})`;

/**
 * Loads wrapped validator code. With `cachedData` (what `script.createCachedData()` gave on the compile
 * thread, the same V8) the code is not parsed or compiled again; the result says whether V8 took it.
 */
export function loadValidator(
  code: string,
  cachedData?: Uint8Array,
): { validate: PayloadValidator; script: Script; cacheTaken: boolean } {
  const script = new Script(code, { filename: 'event-schema-validator.js', cachedData });
  const module = { exports: {} as unknown };
  (script.runInThisContext() as (module: unknown, exports: unknown, require: unknown) => void)(
    module,
    module.exports,
    validatorRequire,
  );
  return {
    validate: module.exports as PayloadValidator,
    script,
    cacheTaken: cachedData !== undefined && !script.cachedDataRejected,
  };
}
