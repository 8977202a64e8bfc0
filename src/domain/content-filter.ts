import siftModule from 'sift';
import { linearRegExp, UnsupportedPattern } from './linear-regexp.js';

// sift ships one UMD file, whose named exports Node's CommonJS loader cannot see: they are the members of
// its default export here.
const {
  $all,
  $and,
  $elemMatch,
  $eq,
  $exists,
  $gt,
  $gte,
  $in,
  $lt,
  $lte,
  $ne,
  $nin,
  $nor,
  $not,
  $or,
  $size,
  createEqualsOperation,
  createQueryTester,
} = siftModule as unknown as typeof import('sift');

// An endpoint's content filter (decisions, "Content filters and trace context"): a MongoDB-style query
// over the outbound body {type, timestamp, data}, evaluated at fan-out. sift compiles a query into a
// function once; it is given only the operators below, so `$where` (which would run the caller's code)
// and `$expr` do not exist here. `$regex` runs on the linear-time engine (linear-regexp.ts), so no
// pattern can hold the event loop.

/** Largest filter, as JSON, and deepest nesting of its objects and arrays. */
export const MAX_FILTER_BYTES = 4_096;
export const MAX_FILTER_DEPTH = 8;

/** A `$regex` whose matches run in time linear in the input (flags: none, or `$options: "i"` is refused). */
function $regex(pattern: unknown, ownerQuery: unknown, options: unknown) {
  const compiled = linearRegExp(String(pattern));
  return createEqualsOperation(
    (value: unknown) => typeof value === 'string' && compiled.test(value),
    ownerQuery as never,
    options as never,
  );
}

/** The operators a filter may use. */
const OPERATIONS = {
  $eq,
  $ne,
  $gt,
  $gte,
  $lt,
  $lte,
  $in,
  $nin,
  $exists,
  $and,
  $or,
  $nor,
  $not,
  $size,
  $all,
  $elemMatch,
  $regex,
};
const OPERATORS = new Set(Object.keys(OPERATIONS));

/** Why `filter` cannot be an endpoint's filter, naming the fault; null when it can. */
export function filterProblem(filter: unknown): string | null {
  if (filter === null || typeof filter !== 'object' || Array.isArray(filter)) return 'filter must be a JSON object';
  const bytes = Buffer.byteLength(JSON.stringify(filter));
  if (bytes > MAX_FILTER_BYTES) return `filter is ${bytes} bytes of JSON; at most ${MAX_FILTER_BYTES}`;
  const problem = walk(filter, 1);
  if (problem) return problem;
  try {
    createQueryTester(filter, { operations: OPERATIONS });
  } catch (error) {
    return `filter is not a valid query: ${(error as Error).message}`;
  }
  return null;
}

function walk(value: unknown, depth: number): string | null {
  if (value === null || typeof value !== 'object') return null;
  if (depth > MAX_FILTER_DEPTH) return `filter nests deeper than ${MAX_FILTER_DEPTH} levels`;
  if (Array.isArray(value)) {
    for (const item of value) {
      const problem = walk(item, depth + 1);
      if (problem) return problem;
    }
    return null;
  }
  for (const [key, child] of Object.entries(value)) {
    if (key.startsWith('$')) {
      if (!OPERATORS.has(key))
        return `filter operator ${key} is not supported (supported: ${[...OPERATORS].join(' ')})`;
      if (key === '$regex') {
        if (typeof child !== 'string') return 'filter $regex must be a string';
        try {
          linearRegExp(child);
        } catch (error) {
          if (error instanceof UnsupportedPattern) return `filter ${error.message}`;
          throw error;
        }
      }
    }
    const problem = walk(child, depth + 1);
    if (problem) return problem;
  }
  return null;
}

/** A checked filter (filterProblem) as a function of the outbound body. */
export type FilterTester = (envelope: unknown) => boolean;

/** Compiled filters by their JSON text: endpoints share them, and an edited filter is new text. */
const compiled = new Map<string, FilterTester>();
/** Most compiled filters kept (a few hundred bytes each); the oldest go first. */
const KEPT = 10_000;

/** The tester of a filter stored as JSON text (checked when it was written). */
export function filterTester(filterJson: string): FilterTester {
  let tester = compiled.get(filterJson);
  if (!tester) {
    tester = createQueryTester(JSON.parse(filterJson) as object, { operations: OPERATIONS }) as FilterTester;
    if (compiled.size >= KEPT) compiled.delete(compiled.keys().next().value!);
    compiled.set(filterJson, tester);
  }
  return tester;
}
