// What one payload's validation may cost. A JSON Schema can ask for work far beyond the payload's size:
// `anyOf` alternatives that each walk a long array, references that branch at every level of nesting
// (2^depth applications), or many patterns tried on one long string. The validators compiled from event
// schemas count, as they run, each subschema applied to a part of the payload (`spend`) and each character
// a pattern or format reads (`charge`), and stop with ValidationBudgetExceeded past a count that grows
// with the payload, or once VALIDATION_DEADLINE_MS have passed (a step's cost varies: a call through a
// reference costs twenty times an inlined check). An ordinary schema spends a few steps per payload value
// and a millisecond or two on the largest payload; a hostile one is stopped early, whatever it asks for.

/** Steps allowed to any payload, and per character of its JSON text. */
export const BASE_STEPS = 10_000;
export const STEPS_PER_CHAR = 4;
/** Characters patterns and formats may read for any payload, and per character of its JSON text. */
export const BASE_CHARS = 100_000;
export const CHARS_PER_CHAR = 8;

/** Longest one payload's validation may run. */
export const VALIDATION_DEADLINE_MS = 50;

export class ValidationBudgetExceeded extends Error {
  constructor(readonly what: 'steps' | 'characters' | 'time') {
    super(`validation needs more than its budget of ${what}`);
  }
}

let steps = 0;
let stepLimit = Number.POSITIVE_INFINITY;
let chars = 0;
let charLimit = Number.POSITIVE_INFINITY;
let charges = 0;
let deadline = Number.POSITIVE_INFINITY;

/** The clock is read every so many steps and charges: reading it on each would cost more than a step. */
const CLOCK_EVERY = 256;

/**
 * Runs `validate` within the budget of a payload whose JSON text has `size` characters. Validation is
 * synchronous, so one budget at a time is all the process needs. Outside this call nothing is counted
 * against a limit (the compile thread runs a validator once to compile it).
 */
export function withinBudget<T>(size: number, validate: () => T): T {
  steps = 0;
  chars = 0;
  charges = 0;
  stepLimit = BASE_STEPS + STEPS_PER_CHAR * size;
  charLimit = BASE_CHARS + CHARS_PER_CHAR * size;
  deadline = performance.now() + VALIDATION_DEADLINE_MS;
  try {
    return validate();
  } finally {
    stepLimit = Number.POSITIVE_INFINITY;
    charLimit = Number.POSITIVE_INFINITY;
    deadline = Number.POSITIVE_INFINITY;
  }
}

/** One subschema applied to one part of the payload. */
export function spend(): void {
  if (++steps > stepLimit) throw new ValidationBudgetExceeded('steps');
  if (steps % CLOCK_EVERY === 0 && performance.now() > deadline) throw new ValidationBudgetExceeded('time');
}
// How ajv's standalone code names this function (compile-thread.ts resolves the module).
spend.code = 'require("herald:validation-budget").spend';

/** A pattern or format about to read `count` characters. */
export function charge(count: number): void {
  chars += count;
  if (chars > charLimit) throw new ValidationBudgetExceeded('characters');
  if (++charges % CLOCK_EVERY === 0 && performance.now() > deadline) throw new ValidationBudgetExceeded('time');
}
