import siftModule from 'sift';
import { linearRegExp, UnsupportedPattern } from './linear-regexp.js';
import { LRUCache } from 'lru-cache';

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
// and `$expr` do not exist here. `$regex` runs on the linear-time engine (linear-regexp.ts).
//
// A tenant's filter runs on the event loop every process shares, so what one evaluation may do is
// bounded twice. When written: at most MAX_FILTER_BYTES of JSON, MAX_FILTER_REGEXES patterns and
// MAX_FILTER_LIST values in one `$in`, `$nin` or `$all`. When run: every evaluation draws on a
// FilterBudget of steps (each value an operator looks at, each value compared or copied for a
// comparison, each character a pattern reads), charged before the work is done; the budget is one
// message's, shared by all the endpoints it fans out to. What runs out of steps stops at once with
// FilterBudgetExceeded, so no evaluation costs more than its budget whatever the payload's size.

/** Largest filter, as JSON, and deepest nesting of its objects and arrays. */
export const MAX_FILTER_BYTES = 4_096;
export const MAX_FILTER_DEPTH = 8;
/** Most `$regex` operators in one filter. */
export const MAX_FILTER_REGEXES = 10;
/** Most values in one `$in`, `$nin` or `$all`. */
export const MAX_FILTER_LIST = 256;

/** An evaluation ran out of its budget's steps: its answer is unknown. */
export class FilterBudgetExceeded extends Error {
  constructor(readonly steps: number) {
    super(`filter evaluation needs more than its budget of ${steps} steps (HERALD_FILTER_BUDGET)`);
  }
}

/** The steps left to the evaluations of one message (or one filter test). */
export class FilterBudget {
  private left: number;
  /** Set once an evaluation ran out: every later one is refused at once. */
  exhausted = false;
  /** Filters left unapplied because the budget ran out (fan-out then delivers: see `receives`). */
  unapplied = 0;

  constructor(readonly steps: number) {
    this.left = steps;
  }

  /** Takes `n` steps, or throws FilterBudgetExceeded when fewer are left. */
  take(n: number): void {
    this.left -= n;
    if (this.left < 0 || this.exhausted) {
      this.exhausted = true;
      throw new FilterBudgetExceeded(this.steps);
    }
  }
}

/** The budget of the evaluation running now: testers run synchronously, one at a time. */
let running: FilterBudget | null = null;

function charge(n: number): void {
  running?.take(n);
}

/** Charges what copying a value for a comparison costs: sift copies arrays, nested arrays included. */
function chargeCopy(value: unknown): void {
  if (!Array.isArray(value)) return;
  charge(value.length);
  for (const item of value) if (Array.isArray(item)) chargeCopy(item);
}

/** sift's equality (null equals undefined; arrays and plain objects compared deeply), a step per value. */
function equals(a: unknown, b: unknown): boolean {
  charge(1);
  if (a == null && b == null) return true;
  if (a === b) return true;
  const kind = Object.prototype.toString.call(a);
  if (kind !== Object.prototype.toString.call(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    if (a.length !== other.length) return false;
    for (let i = 0; i < a.length; i++) if (!equals(a[i], other[i])) return false;
    return true;
  }
  if (kind === '[object Object]') {
    const left = a as Record<string, unknown>;
    const right = b as Record<string, unknown>;
    const keys = Object.keys(left);
    charge(keys.length);
    if (keys.length !== Object.keys(right).length) return false;
    for (const key of keys) if (!equals(left[key], right[key])) return false;
    return true;
  }
  return false;
}

/** The comparison sift calls for `$eq`, `$ne`, `$nin`, `$all` and implied equality: its copy of the value is charged too. */
function compare(a: unknown, b: unknown): boolean {
  chargeCopy(b);
  return equals(a, b);
}

/** sift's operation: fed each value along its path by `next`, it says whether it is done and keeps the item. */
interface Operation {
  readonly propop: boolean;
  keep: boolean;
  done: boolean;
  reset(): void;
  next(item: unknown, key?: string | number, owner?: unknown, root?: boolean, leaf?: boolean): void;
}
type Creator = (params: unknown, ownerQuery: unknown, options: unknown, name: string) => Operation;

/**
 * An operator whose every look at a value takes a step. `$all` compares the value with each value it
 * lists, copying an array value each time: it takes those steps before it starts.
 */
function metered(create: Creator, name: string): Creator {
  return (params, ownerQuery, options) => {
    const operation = create(params, ownerQuery, options, name);
    const next = operation.next.bind(operation);
    const listed = name === '$all' && Array.isArray(params) ? params.length : 0;
    operation.next = (...args: Parameters<typeof next>) => {
      const item = args[0];
      charge(1 + listed * (Array.isArray(item) ? item.length + 1 : 1));
      return next(...args);
    };
    return operation;
  };
}

/** A `$regex` whose matches run in time linear in the input, charged a step per character read. */
function $regex(pattern: unknown, ownerQuery: unknown, options: unknown) {
  const compiled = linearRegExp(String(pattern));
  return createEqualsOperation(
    (value: unknown) => {
      if (typeof value !== 'string') return false;
      charge(value.length);
      return compiled.test(value);
    },
    ownerQuery as never,
    options as never,
  );
}

/**
 * `$in` with sift's meaning (a value, or an element of an array value, equal to one listed), its
 * strings, numbers and booleans looked up in a set: a step per value looked at, not one per value listed.
 */
class InSet implements Operation {
  readonly propop = true;
  keep = false;
  done = false;
  private readonly plain = new Set<unknown>();
  private readonly structured: unknown[] = [];
  private readonly null: boolean;

  constructor(params: unknown) {
    const listed = Array.isArray(params) ? params : [params];
    for (const value of listed) {
      if (value !== null && typeof value === 'object') {
        if (!Array.isArray(value) && Object.keys(value).some((key) => key.startsWith('$')))
          throw new Error('cannot nest $ under $in');
        this.structured.push(value);
      } else if (value !== null) this.plain.add(value);
    }
    this.null = listed.includes(null);
  }

  reset(): void {
    this.keep = false;
    this.done = false;
  }

  next(item: unknown): void {
    const found =
      item == null
        ? this.null
        : typeof item !== 'object'
          ? this.plain.has(item)
          : this.structured.some((value) => compare(value, item));
    this.keep = found;
    this.done = found;
  }
}

/** The operators a filter may use. */
const OPERATIONS = Object.fromEntries(
  Object.entries({
    $eq,
    $ne,
    $gt,
    $gte,
    $lt,
    $lte,
    $in: (params: unknown) => new InSet(params),
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
  } as Record<string, Creator>).map(([name, create]) => [name, metered(create, name)]),
) as Record<string, Creator>;
const OPERATORS = new Set(Object.keys(OPERATIONS));
const QUERY_OPTIONS = { operations: OPERATIONS, compare } as never;

/** Why `filter` cannot be an endpoint's filter, naming the fault; null when it can. */
export function filterProblem(filter: unknown): string | null {
  if (filter === null || typeof filter !== 'object' || Array.isArray(filter)) return 'filter must be a JSON object';
  const json = JSON.stringify(filter);
  const bytes = Buffer.byteLength(json);
  if (bytes > MAX_FILTER_BYTES) return `filter is ${bytes} bytes of JSON; at most ${MAX_FILTER_BYTES}`;
  const counts = { regexes: 0 };
  const problem = walk(filter, 1, counts);
  if (problem) return problem;
  if (counts.regexes > MAX_FILTER_REGEXES)
    return `filter has ${counts.regexes} $regex operators; at most ${MAX_FILTER_REGEXES}`;
  try {
    // Compiled now and kept: the store keeps this text, so the first message after it does not pay for it.
    filterTester(json);
  } catch (error) {
    return `filter is not a valid query: ${(error as Error).message}`;
  }
  return null;
}

function walk(value: unknown, depth: number, counts: { regexes: number }): string | null {
  if (value === null || typeof value !== 'object') return null;
  if (depth > MAX_FILTER_DEPTH) return `filter nests deeper than ${MAX_FILTER_DEPTH} levels`;
  if (Array.isArray(value)) {
    for (const item of value) {
      const problem = walk(item, depth + 1, counts);
      if (problem) return problem;
    }
    return null;
  }
  for (const [key, child] of Object.entries(value)) {
    if (key.startsWith('$')) {
      if (!OPERATORS.has(key))
        return `filter operator ${key} is not supported (supported: ${[...OPERATORS].join(' ')})`;
      if ((key === '$in' || key === '$nin' || key === '$all') && Array.isArray(child) && child.length > MAX_FILTER_LIST)
        return `filter ${key} lists ${child.length} values; at most ${MAX_FILTER_LIST}`;
      if (key === '$regex') {
        counts.regexes++;
        if (typeof child !== 'string') return 'filter $regex must be a string';
        try {
          linearRegExp(child);
        } catch (error) {
          if (error instanceof UnsupportedPattern) return `filter ${error.message}`;
          throw error;
        }
      }
    }
    const problem = walk(child, depth + 1, counts);
    if (problem) return problem;
  }
  return null;
}

/**
 * A checked filter (filterProblem) as a function of the outbound body, drawing on `budget`: throws
 * FilterBudgetExceeded when the budget runs out (or ran out in an earlier evaluation).
 */
export type FilterTester = (envelope: unknown, budget: FilterBudget) => boolean;

/**
 * Compiled filters by their JSON text: endpoints share them, and an edited filter is new text. At most
 * 10,000 kept (a few hundred bytes each); the least recently used go first.
 */
const compiled = new LRUCache<string, FilterTester>({ max: 10_000 });

/** The tester of a filter stored as JSON text (checked when it was written). */
export function filterTester(filterJson: string): FilterTester {
  let tester = compiled.get(filterJson);
  if (!tester) {
    const test = createQueryTester(JSON.parse(filterJson) as object, QUERY_OPTIONS) as (envelope: unknown) => boolean;
    tester = (envelope, budget) => {
      if (budget.exhausted) throw new FilterBudgetExceeded(budget.steps);
      running = budget;
      try {
        return test(envelope);
      } finally {
        running = null;
      }
    };
    compiled.set(filterJson, tester);
  }
  return tester;
}
