import { _ } from 'ajv';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { useFunc } from 'ajv/dist/compile/util.js';
import standaloneCode from 'ajv/dist/standalone/index.js';
import addFormats from 'ajv-formats';
import { linearRegExp, UnsupportedPattern } from './linear-regexp.js';
import { SchemaGraph } from './schema-graph.js';
import { formats } from './schema-formats.js';
import {
  BASE_CHARS,
  BASE_STEPS,
  CHARS_PER_CHAR,
  spend,
  STEPS_PER_CHAR,
  VALIDATION_DEADLINE_MS,
  ValidationBudgetExceeded,
  withinBudget,
} from './validation-budget.js';

// Event schemas: a catalog entry may carry a JSON Schema (draft 2020-12) that every payload of its event
// type must satisfy. Schemas come from tenants, and one tenant's schema runs in a process every tenant
// shares, so what a schema may cost is bounded at every step:
// - checking and compiling it runs on a thread of its own, with a deadline (src/event-schemas/);
// - what it compiles to is bounded in size, and the compiled validators a process keeps in bytes;
// - its patterns run on a linear-time engine (linear-regexp.ts), never on V8's backtracking one;
// - validating one payload is bounded in steps and characters read (validation-budget.ts);
// - `uniqueItems` over items compared pair by pair needs a small `maxItems`;
// - references that lead back to where they started without descending into the payload are refused.

/** Longest schema accepted, as JSON text. */
export const MAX_SCHEMA_CHARS = 65_536;

/** The only dialect accepted: the one this validator implements. `$schema` may be left out. */
export const SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

/**
 * Largest validator a schema may compile to, counting its source and V8's compiled code: a process keeps
 * many, and loading one on the event loop costs time in proportion (about 3 ms per MiB from V8's cache).
 */
export const MAX_VALIDATOR_BYTES = 4 * 1024 * 1024;

/**
 * Most items an array checked for `uniqueItems` may have, unless its items are of scalar types: ajv then
 * compares every pair with a deep equality (n² work). ajv checks `maxItems` first, so a longer array
 * fails before the comparisons.
 */
export const MAX_UNIQUE_ITEMS = 100;

/** Longest error message returned: ajv's message for `pattern` quotes the pattern, which may be long. */
const MAX_PROBLEM_CHARS = 400;

/** The keyword added to every subschema before compiling: it spends one step of the budget when applied. */
const STEP_KEYWORD = 'heraldValidationStep';

export type PayloadValidator = ValidateFunction;

/**
 * Options of every ajv instance here. ajv never fetches a `$ref` (no `loadSchema`): a reference that does
 * not resolve within the schema (or to the 2020-12 meta-schemas ajv ships) fails to compile. Keywords ajv
 * does not know are annotations, as JSON Schema says, and are allowed (`strict: false`). The first failure
 * is enough to answer, and stopping there bounds the work a payload costs.
 */
const options = { strict: false, allErrors: false, logger: false } as const;

/** Checks schemas against the meta-schema; it compiles none of them, so it keeps none of them. */
const metaChecker = new Ajv2020(options);
(addFormats as unknown as (ajv: Ajv2020) => void)(metaChecker);

const clip = (text: string) => (text.length > MAX_PROBLEM_CHARS ? `${text.slice(0, MAX_PROBLEM_CHARS - 1)}…` : text);

/** Why the JSON text of a schema is too long to be considered, or null. Cheap: run before anything else. */
export function schemaSizeProblem(schemaJson: string): string | null {
  return schemaJson.length > MAX_SCHEMA_CHARS
    ? `schema is ${schemaJson.length} characters of JSON; at most ${MAX_SCHEMA_CHARS}`
    : null;
}

/**
 * Why `schema` cannot be an event schema, or null: its dialect, the meta-schema, and the rules above that
 * the schema's structure decides. Compiling may still refuse it (validatorSource).
 */
export function schemaProblem(schema: unknown): string | null {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return 'schema must be an object';
  const dialect = (schema as { $schema?: unknown }).$schema;
  if (dialect !== undefined && dialect !== SCHEMA_DIALECT && dialect !== `${SCHEMA_DIALECT}#`)
    return `schema/$schema must be ${SCHEMA_DIALECT} (JSON Schema draft 2020-12) or absent`;
  if (!metaChecker.validateSchema(schema)) {
    const first = metaChecker.errors?.[0];
    return clip(`schema${first?.instancePath ?? ''} ${first?.message ?? 'is not a valid JSON Schema'}`);
  }
  const graph = new SchemaGraph(schema);
  if (graph.problems.length > 0) return clip(`schema${graph.problems[0]}`);
  const cycle = graph.inPlaceCycle();
  if (cycle)
    return clip(
      `schema${cycle[0] === '#' ? '' : cycle[0]} refers back to itself without descending into the payload (${cycle.join(' → ')}): validating it would never end`,
    );
  for (const { schema: node, at } of graph.nodes) {
    if (typeof node === 'boolean') continue;
    const problem = nodeProblem(node, `schema${at}`);
    if (problem) return clip(problem);
  }
  return null;
}

/** Why one subschema's own keywords are refused, or null. */
function nodeProblem(node: Record<string, unknown>, at: string): string | null {
  if (node.uniqueItems === true) {
    const itemTypes = [(node.items as { type?: unknown } | undefined)?.type].flat();
    const scalarItems = itemTypes.every((type) => typeof type === 'string' && type !== 'object' && type !== 'array');
    const most = node.maxItems;
    if (!scalarItems && !(typeof most === 'number' && most <= MAX_UNIQUE_ITEMS))
      return `${at}/uniqueItems needs maxItems of at most ${MAX_UNIQUE_ITEMS} beside it, or items of scalar types: comparing every pair of a long array takes quadratic time`;
  }
  const patterns: [string, string][] = [];
  if (typeof node.pattern === 'string') patterns.push([node.pattern, `${at}/pattern`]);
  const named = node.patternProperties;
  if (named !== null && typeof named === 'object')
    for (const name of Object.keys(named)) patterns.push([name, `${at}/patternProperties`]);
  for (const [pattern, where] of patterns) {
    try {
      linearRegExp(pattern, 'u');
    } catch (error) {
      if (error instanceof UnsupportedPattern) return `${where}: ${error.message}`;
      throw error;
    }
  }
  return null;
}

/**
 * The JavaScript source of a validator for a schema that passed schemaProblem: a CommonJS module body
 * exporting the validate function, whose `require`s name only ajv's runtime and the `herald:` modules
 * that compile-thread.ts resolves. Each subschema spends a step of the budget when applied. Throws, with
 * the reason, when the schema does not compile.
 */
export function validatorSource(schema: object): string {
  const copy = structuredClone(schema);
  for (const { schema: node } of new SchemaGraph(copy).nodes) if (typeof node === 'object') node[STEP_KEYWORD] = true;
  const ajv = new Ajv2020({
    ...options,
    validateSchema: false,
    code: {
      source: true,
      regExp: linearRegExp,
      formats: _`require("herald:schema-formats").formats`,
    },
  });
  for (const [name, format] of Object.entries(formats)) ajv.addFormat(name, format as never);
  ajv.addKeyword({
    keyword: STEP_KEYWORD,
    schemaType: 'boolean',
    code(cxt) {
      cxt.gen.code(_`${useFunc(cxt.gen, spend)}()`);
    },
  });
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(copy);
  } catch (error) {
    throw new Error(clip(`schema does not compile: ${(error as Error).message}`));
  }
  return (standaloneCode as unknown as (ajv: Ajv2020, validate: ValidateFunction) => string)(ajv, validate);
}

/**
 * Why `value` fails `validate`, or null: the failing location as a JSON pointer (also written as
 * `<what>/a/b`) and the rule (the schema keyword and its place in the schema), as in
 * `payload/amount (at /amount) must be integer (rule "type" at #/properties/amount/type)`. `size` is the
 * length of the value's JSON text, which sets the validation budget.
 */
export function schemaFailure(validate: PayloadValidator, value: unknown, what: string, size: number): string | null {
  try {
    if (withinBudget(size, () => validate(value))) return null;
  } catch (error) {
    if (error instanceof ValidationBudgetExceeded) return budgetProblem(what, error.what);
    // The stack ran out: the payload nests deeper than the schema's references can follow.
    if (error instanceof RangeError) return `${what} nests too deeply to be checked against the schema`;
    throw error;
  }
  const error = validate.errors?.[0];
  if (!error) return `${what} does not match the schema`;
  const pointer = error.instancePath + namedProperty(error);
  return clip(
    `${what}${pointer} (at ${pointer === '' ? '"" (the root)' : pointer}) ${error.message ?? 'is invalid'} (rule "${error.keyword}" at ${error.schemaPath})`,
  );
}

/** Why a validation stopped over its budget (validation-budget.ts), for the client. */
function budgetProblem(what: string, budget: ValidationBudgetExceeded['what']): string {
  const cause = {
    steps: `applies more of the schema's parts to it than its size allows (${BASE_STEPS} plus ${STEPS_PER_CHAR} per character of JSON)`,
    characters: `makes patterns and formats read more than its size allows (${BASE_CHARS} plus ${CHARS_PER_CHAR} characters per character of JSON)`,
    time: `takes more than ${VALIDATION_DEADLINE_MS} ms`,
  }[budget];
  return `${what} cannot be checked against the schema within the limits: checking it ${cause}; the schema's alternatives or references branch too much for it`;
}

/** For a failure about one property (missing, not allowed), the pointer step to that property. */
function namedProperty(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  const name = params.missingProperty ?? params.additionalProperty ?? params.unevaluatedProperty;
  return typeof name === 'string' ? `/${name.replace(/~/g, '~0').replace(/\//g, '~1')}` : '';
}
