import { createHash } from 'node:crypto';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

// Event schemas: a catalog entry may carry a JSON Schema (draft 2020-12) that every payload of its event
// type must satisfy. Schemas come from API clients, so they are checked before they are stored (size,
// dialect, meta-schema, patterns that backtrack without bound, references that do not resolve locally)
// and compiled once per catalog entry and version: an emit runs a compiled function, never the compiler.

/** Longest schema accepted, as JSON text: compiled code grows with it, and a process keeps many compiled. */
export const MAX_SCHEMA_CHARS = 65_536;

/** The only dialect accepted: the one this validator implements. `$schema` may be left out. */
export const SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

/** Compiled schemas kept; past this the least recently used one is dropped (and compiled again if needed). */
const COMPILED_CACHE_ENTRIES = 1_000;

/** Longest error message returned: ajv's message for `pattern` quotes the pattern, which may be long. */
const MAX_PROBLEM_CHARS = 400;

export type PayloadValidator = ValidateFunction;

let compilations = 0;
/** How many schemas this process compiled: an emit that compiles is a bug, and tests count with it. */
export const schemaCompilations = (): number => compilations;

/**
 * Options of every ajv instance here. ajv never fetches a `$ref` (no `loadSchema`): a reference that does
 * not resolve within the schema (or to the 2020-12 meta-schemas ajv ships) fails to compile. Keywords ajv
 * does not know are annotations, as JSON Schema says, and are allowed (`strict: false`). The first failure
 * is enough to answer, and stopping there bounds the work a payload costs.
 */
const options = { strict: false, allErrors: false, logger: false } as const;

const withFormats = (ajv: Ajv2020): Ajv2020 => {
  (addFormats as unknown as (ajv: Ajv2020) => void)(ajv);
  return ajv;
};

/** Checks schemas against the meta-schema; it compiles none of them, so it keeps none of them. */
const metaChecker = withFormats(new Ajv2020(options));

/**
 * Compiles a schema on an ajv instance of its own: ajv keeps every schema it compiles (and refuses a
 * second schema with an `$id` it holds), so a shared instance would grow with each schema change and
 * make one client's `$id` collide with another's. A fresh instance costs about a millisecond.
 */
function compile(schema: object): ValidateFunction {
  compilations++;
  return withFormats(new Ajv2020({ ...options, validateSchema: false })).compile(schema);
}

/**
 * Why `schema` cannot be an event schema, or null with its compiled validator. The checks run before
 * anything is stored, so a schema refused here changes nothing.
 */
export function checkSchema(schema: object): { ok: true; validate: PayloadValidator } | { ok: false; problem: string } {
  const text = JSON.stringify(schema);
  if (text.length > MAX_SCHEMA_CHARS)
    return { ok: false, problem: `schema is ${text.length} characters of JSON; at most ${MAX_SCHEMA_CHARS}` };
  const dialect = (schema as { $schema?: unknown }).$schema;
  if (dialect !== undefined && dialect !== SCHEMA_DIALECT && dialect !== `${SCHEMA_DIALECT}#`)
    return { ok: false, problem: `schema/$schema must be ${SCHEMA_DIALECT} (JSON Schema draft 2020-12) or absent` };
  if (!metaChecker.validateSchema(schema)) {
    const first = metaChecker.errors?.[0];
    return {
      ok: false,
      problem: clip(`schema${first?.instancePath ?? ''} ${first?.message ?? 'is not a valid JSON Schema'}`),
    };
  }
  const costly = costlyRule(schema, 'schema');
  if (costly !== null) return { ok: false, problem: clip(costly) };
  try {
    return { ok: true, validate: compile(schema) };
  } catch (error) {
    return { ok: false, problem: clip(`schema does not compile: ${(error as Error).message}`) };
  }
}

// Compiled validators by catalog entry and version, least recently used first (a Map keeps insertion
// order). The schema text's hash is kept beside each: a version is written by one update, but an entry
// deleted and created again, or two processes racing, could reuse a version with another schema.
const compiled = new Map<string, { hash: string; validate: PayloadValidator }>();

/**
 * The compiled validator of a stored schema, compiled at most once per `entryKey` (catalog entry and
 * version) and schema text. Throws when the text no longer compiles.
 */
export function compiledSchema(entryKey: string, schemaJson: string): PayloadValidator {
  const hash = createHash('sha256').update(schemaJson).digest('base64');
  const cached = compiled.get(entryKey);
  if (cached && cached.hash === hash) {
    compiled.delete(entryKey);
    compiled.set(entryKey, cached);
    return cached.validate;
  }
  const validate = compile(JSON.parse(schemaJson) as object);
  compiled.delete(entryKey);
  if (compiled.size >= COMPILED_CACHE_ENTRIES) compiled.delete(compiled.keys().next().value!);
  compiled.set(entryKey, { hash, validate });
  return validate;
}

/**
 * Why `value` fails `validate`, or null: the failing location as a JSON pointer (also written as
 * `<what>/a/b`) and the rule (the schema keyword and its place in the schema), as in
 * `payload/amount (at /amount) must be integer (rule "type" at #/properties/amount/type)`.
 */
export function schemaFailure(validate: PayloadValidator, value: unknown, what: string): string | null {
  if (validate(value)) return null;
  const error = validate.errors?.[0];
  if (!error) return `${what} does not match the schema`;
  const pointer = error.instancePath + namedProperty(error);
  return clip(
    `${what}${pointer} (at ${pointer === '' ? '"" (the root)' : pointer}) ${error.message ?? 'is invalid'} (rule "${error.keyword}" at ${error.schemaPath})`,
  );
}

/** For a failure about one property (missing, not allowed), the pointer step to that property. */
function namedProperty(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  const name = params.missingProperty ?? params.additionalProperty ?? params.unevaluatedProperty;
  return typeof name === 'string' ? `/${name.replace(/~/g, '~0').replace(/\//g, '~1')}` : '';
}

const clip = (text: string) => (text.length > MAX_PROBLEM_CHARS ? `${text.slice(0, MAX_PROBLEM_CHARS - 1)}…` : text);

/** Keywords whose values are data, not schemas: a `pattern` inside them is a value, not a rule. */
const DATA_KEYWORDS = new Set(['const', 'enum', 'default', 'examples', 'example']);

/**
 * Most items an array checked for `uniqueItems` may have, unless its items are of a scalar type: ajv then
 * compares every pair with a deep equality (n² work), and a 512 KiB payload of small objects would hold
 * the event loop for minutes. ajv checks `maxItems` first, so a longer array fails before the comparisons.
 */
export const MAX_UNIQUE_ITEMS = 256;

const SCALAR_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null']);

/**
 * Why a rule of `schema` could cost a payload unbounded time, or null: a `pattern` (or `patternProperties`
 * name) that can backtrack without bound, or `uniqueItems` over items of any type without a small
 * `maxItems`. `at` is the location of `schema`, for the message.
 */
function costlyRule(schema: unknown, at: string): string | null {
  if (schema === null || typeof schema !== 'object') return null;
  const rules = schema as Record<string, unknown>;
  if (!Array.isArray(schema) && rules.uniqueItems === true) {
    const itemTypes = (rules.items as { type?: unknown } | undefined)?.type;
    const scalarItems = [itemTypes].flat().every((type) => typeof type === 'string' && SCALAR_TYPES.has(type));
    const most = rules.maxItems;
    if (!scalarItems && !(typeof most === 'number' && most <= MAX_UNIQUE_ITEMS))
      return `${at}/uniqueItems needs maxItems of at most ${MAX_UNIQUE_ITEMS} beside it, or items of one scalar type: comparing every pair of a long array takes quadratic time`;
  }
  for (const [key, value] of Object.entries(schema)) {
    if (DATA_KEYWORDS.has(key)) continue;
    const bad =
      key === 'pattern' && typeof value === 'string' && backtracksWithoutBound(value)
        ? value
        : key === 'patternProperties' && value !== null && typeof value === 'object'
          ? Object.keys(value).find(backtracksWithoutBound)
          : undefined;
    if (bad !== undefined)
      return `${at}/${key} ${JSON.stringify(bad)} repeats a repeated part or uses a back-reference: such patterns can take exponential time`;
    const inner = costlyRule(value, `${at}/${key}`);
    if (inner !== null) return inner;
  }
  return null;
}

/**
 * Whether a pattern repeats a group that itself repeats (`(a+)+`, `(\w*)*`, `(a|b+){2,}`) or uses a
 * back-reference: the shapes whose matching time can grow exponentially with the input. ajv runs patterns
 * with JavaScript's backtracking engine on the event loop, so one such pattern and a crafted payload
 * would stall every request. A reading of the pattern's structure, not a proof: it errs on refusing.
 */
export function backtracksWithoutBound(pattern: string): boolean {
  // For each open group: whether something inside it repeats.
  const groups: boolean[] = [];
  // Whether the item just read is a group whose inside repeats (a quantifier after it nests repetition).
  let repeatingGroup = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\') {
      if (/[1-9k]/.test(pattern[i + 1] ?? '')) return true;
      i++;
      repeatingGroup = false;
    } else if (c === '[') {
      for (i++; i < pattern.length && pattern[i] !== ']'; i++) if (pattern[i] === '\\') i++;
      repeatingGroup = false;
    } else if (c === '(') {
      groups.push(false);
      repeatingGroup = false;
    } else if (c === ')') {
      repeatingGroup = groups.pop() ?? false;
      if (repeatingGroup && groups.length > 0) groups[groups.length - 1] = true;
    } else if (c === '*' || c === '+' || c === '{') {
      const most = c === '{' ? quantifierMost(pattern, i) : Infinity;
      if (most === undefined) {
        repeatingGroup = false;
        continue;
      }
      if (c === '{') i = pattern.indexOf('}', i);
      if (most <= 1) continue;
      if (repeatingGroup) return true;
      if (groups.length > 0) groups[groups.length - 1] = true;
    } else if (c !== '?') {
      repeatingGroup = false;
    }
  }
  return false;
}

/** The most repetitions a `{n}`, `{n,}` or `{n,m}` at `at` allows, or undefined when it is no quantifier. */
function quantifierMost(pattern: string, at: number): number | undefined {
  const match = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(at, at + 40));
  if (!match) return undefined;
  if (match[2] === undefined) return Number(match[1]);
  return match[3] === '' ? Infinity : Number(match[3]);
}
