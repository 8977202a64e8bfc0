import {
  newQuickJSWASMModuleFromVariant,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSSyncVariant,
  type QuickJSWASMModule,
} from 'quickjs-emscripten-core';
import * as releaseSync from '@jitl/quickjs-wasmfile-release-sync';
import { LRUCache } from 'lru-cache';

// Tenants' transformation code runs in QuickJS compiled to WebAssembly (quickjs-emscripten): an interpreter
// with its own heap inside the wasm memory, so the code sees only what JavaScript itself defines. No
// `require`, `import`, `fetch`, `process`, timers or host object exists there: nothing of Node is handed in,
// and the module loader is never set. Each endpoint's code gets a runtime of its own with a memory cap and a
// stack cap, and an interrupt handler ends a run at its CPU deadline. A runtime that hit a limit or threw
// from the engine is thrown away and made again on the next run, so no broken state outlives a run.

/** The limits of one run. */
export interface SandboxLimits {
  /** CPU time one run may take (HERALD_TRANSFORMATION_TIMEOUT). */
  timeoutMs: number;
  /** The heap one endpoint's code may grow to (HERALD_TRANSFORMATION_MEMORY). */
  memoryBytes: number;
  /**
   * The longest webhook a run may return, as JSON: longer fails in the sandbox, so that text is never
   * copied to the event loop and parsed there only to be refused.
   */
  maxReturnedChars: number;
}

/** What one run gave: the handler's return value as JSON (null: not JSON-able), or why it failed. */
export type RunOutcome = { returned: string | null } | { error: string };

/** A run that came without its code for a version this sandbox has not compiled (or has dropped). */
export const MISSING_CODE = Symbol('missing code');

/** Native stack one runtime may use: deep enough for real code, shallow enough that wasm never overflows the thread's. */
const STACK_BYTES = 128 * 1024;
/** Longest the top level of an endpoint's code may take when it is compiled, unless a run may take longer. */
const COMPILE_DEADLINE_MS = 1_000;
/** Longest the warm-up may take (it compiles the engine's WebAssembly). */
const WARM_DEADLINE_MS = 10_000;

/**
 * What JavaScript a handler has: the language and its data built-ins, without Proxy and typed arrays (less
 * engine to reach, and a runtime made in less time). Promise stays: `import()` and async functions are
 * language, and the engine's own teardown expects what they make.
 */
const INTRINSICS = {
  BaseObjects: true,
  Date: true,
  Eval: true,
  StringNormalize: true,
  RegExp: true,
  JSON: true,
  MapSet: true,
  Promise: true,
} as const;

/**
 * The wrapper around the tenant's code: it defines `handler`, and the wrapper keeps its own references to
 * JSON, taken before that code runs, so code that replaces them breaks only its own runs (a result that is
 * not the webhook object is refused outside). A result longer than `maxChars` as JSON comes back as its
 * length, a number, which run() refuses.
 */
function wrapped(code: string, maxChars: number): string {
  return `(function () {
  const parse = JSON.parse, stringify = JSON.stringify;
  ${code}
  ;if (typeof handler !== 'function') throw new TypeError('the code must define function handler(webhook)');
  const run = handler;
  return function (input) {
    const value = run(parse(input));
    if (value === undefined) return undefined;
    const text = stringify(value);
    return typeof text === 'string' && text.length > ${maxChars} ? text.length : text;
  };
})()`;
}

interface Compiled {
  runtime: QuickJSRuntime;
  context: QuickJSContext;
  run: QuickJSHandle;
  deadline: number;
}

let module: Promise<QuickJSWASMModule> | null = null;

function quickjs(): Promise<QuickJSWASMModule> {
  // The package's types describe its CommonJS build, where `default` is the whole module; imported as ESM
  // (dist/index.mjs), `default` is the variant itself.
  module ??= newQuickJSWASMModuleFromVariant(releaseSync.default as unknown as QuickJSSyncVariant);
  return module;
}

export class Sandbox {
  /**
   * Compiled runtimes by version (about 75 KB each), at most `kept`: the least recently used goes first, and
   * one dropped or forgotten is disposed.
   */
  private readonly compiled: LRUCache<string, Compiled>;

  constructor(
    private readonly limits: SandboxLimits,
    kept: number,
  ) {
    this.compiled = new LRUCache({ max: kept, dispose: (entry) => this.dispose(entry) });
  }

  /**
   * Runs `code`'s handler on `input` (JSON); `key` names the code's version, so its compilation is reused.
   * `code` null: the caller takes this version to be compiled here; MISSING_CODE when it is not. With
   * `input` null the code is only compiled (and not kept): whether it defines a handler. Not `keep`: a
   * version not compiled here is compiled for this run alone (a simulation's draft), so that it takes no
   * endpoint's place among those kept.
   */
  async run(
    key: string,
    code: string | null,
    input: string | null,
    /** Told when the handler's call begins, with its deadline (Date.now()): its code is compiled by then. */
    calling?: (deadline: number) => void,
    keep = true,
  ): Promise<RunOutcome | typeof MISSING_CODE> {
    const engine = await quickjs();
    if (input === null) {
      if (code === null) return MISSING_CODE;
      const made = this.compile(engine, code);
      if ('error' in made) return made;
      this.dispose(made);
      return { returned: null };
    }
    let entry = this.compiled.get(key);
    if (!entry) {
      if (code === null) return MISSING_CODE;
      const made = this.compile(engine, code);
      if ('error' in made) return made;
      if (!keep) {
        try {
          return this.call(key, made, input, calling);
        } finally {
          this.dispose(made);
        }
      }
      entry = made;
      this.compiled.set(key, entry);
    }
    return this.call(key, entry, input, calling);
  }

  /** Calls the handler compiled in `entry` on `input`; a limit reached throws away what is kept as `key`. */
  private call(key: string, entry: Compiled, input: string, calling?: (deadline: number) => void): RunOutcome {
    entry.deadline = Date.now() + this.limits.timeoutMs;
    calling?.(entry.deadline);
    const { context } = entry;
    let result: ReturnType<QuickJSContext['callFunction']>;
    try {
      const argument = context.newString(input);
      result = context.callFunction(entry.run, context.undefined, argument);
      argument.dispose();
    } catch (error) {
      this.compiled.delete(key);
      return { error: `failed: ${error instanceof Error ? error.message : String(error)}` };
    }
    if (result.error) {
      const error = this.failure(context, result.error);
      result.error.dispose();
      // A limit reached leaves the engine mid-way: its runtime is made again.
      if (!error.startsWith('threw')) this.compiled.delete(key);
      return { error };
    }
    const value = result.value;
    const kind = context.typeof(value);
    const returned = kind === 'string' ? context.getString(value) : null;
    value.dispose();
    if (kind === 'number')
      return { error: `bad return value: the webhook returned is larger than ${this.limits.maxReturnedChars} bytes` };
    return { returned };
  }

  /**
   * The longest a run may take before its handler is called: its code's top level within the compile
   * deadline, then its own deadline (`input` null: the compile alone). A run whose code is compiled here
   * already reaches the call at once, where `calling` tells its deadline. Past these (and a grace) the run
   * is stuck in the engine's own C code, where no deadline is checked.
   */
  longestMs(input: string | null): number {
    const compile = Math.max(this.limits.timeoutMs, COMPILE_DEADLINE_MS);
    return input === null ? compile : compile + this.limits.timeoutMs;
  }

  /**
   * Loads the engine and runs a handler once, outside any tenant's deadline: the first calls into the
   * WebAssembly module compile its code, which must not count against the first run of an endpoint.
   */
  async warm(): Promise<void> {
    const engine = await quickjs();
    const made = this.compile(engine, 'function handler(webhook) { return webhook; }', WARM_DEADLINE_MS);
    if ('error' in made) return;
    made.deadline = Date.now() + WARM_DEADLINE_MS;
    const argument = made.context.newString('{}');
    const result = made.context.callFunction(made.run, made.context.undefined, argument);
    argument.dispose();
    (result.error ?? result.value).dispose();
    this.dispose(made);
  }

  /** Throws every compiled runtime away. */
  close(): void {
    this.compiled.clear();
  }

  /**
   * A runtime for `code`, its top level run: within the run's deadline or COMPILE_DEADLINE_MS, whichever is
   * longer (compiling 64 KB of code on a busy machine may take longer than a run may).
   */
  private compile(
    engine: QuickJSWASMModule,
    code: string,
    deadlineMs = Math.max(this.limits.timeoutMs, COMPILE_DEADLINE_MS),
  ): Compiled | { error: string } {
    const runtime = engine.newRuntime();
    runtime.setMemoryLimit(this.limits.memoryBytes);
    runtime.setMaxStackSize(STACK_BYTES);
    const entry = { runtime, deadline: Date.now() + deadlineMs } as Compiled;
    runtime.setInterruptHandler(() => Date.now() > entry.deadline);
    const context = runtime.newContext({ intrinsics: INTRINSICS });
    entry.context = context;
    try {
      const result = context.evalCode(wrapped(code, this.limits.maxReturnedChars), 'transformation.js');
      if (result.error) {
        const error = this.failure(context, result.error);
        result.error.dispose();
        context.dispose();
        runtime.dispose();
        return { error };
      }
      entry.run = result.value;
      return entry;
    } catch (error) {
      return { error: `failed: ${error instanceof Error ? error.message : String(error)}` };
    }
  }

  /** The words for a run that did not return: a limit reached, or what the code threw. */
  private failure(context: QuickJSContext, handle: QuickJSHandle): string {
    const dumped = context.dump(handle) as { name?: unknown; message?: unknown } | unknown;
    const name = typeof dumped === 'object' && dumped !== null ? String((dumped as { name?: unknown }).name ?? '') : '';
    const message =
      typeof dumped === 'object' && dumped !== null
        ? String((dumped as { message?: unknown }).message ?? '')
        : String(dumped);
    if (name === 'InternalError' && message === 'interrupted')
      return `deadline of ${this.limits.timeoutMs} ms exceeded`;
    if (name === 'InternalError' && message === 'out of memory')
      return `memory limit of ${shownBytes(this.limits.memoryBytes)} exceeded`;
    if (name === 'InternalError' && message === 'stack overflow') return 'stack overflow (recursion too deep)';
    // What the code threw, cut short: it is shown in the attempt and in simulate's answer.
    const words = name ? `${name}: ${message}` : message;
    return `threw ${words.slice(0, 500)}`;
  }

  private dispose(entry: Compiled): void {
    try {
      entry.run?.dispose();
      entry.context.dispose();
      entry.runtime.dispose();
    } catch {
      // A runtime left mid-way by a limit may not free cleanly; its wasm memory is reused all the same.
    }
  }
}

/** A size in words: whole megabytes as `8 MB`, else bytes. */
function shownBytes(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / 1024 / 1024} MB` : `${bytes} bytes`;
}
