import { parentPort } from 'node:worker_threads';
import { MAX_VALIDATOR_BYTES, schemaProblem, validatorSource } from '../domain/event-schema.js';
import { withinBudget } from '../domain/validation-budget.js';
import { loadValidator, wrapValidatorSource } from './validator-code.js';

// Runs on the schema compile thread (compiler.ts): checks and compiles one schema at a time, off the
// service's event loop. A schema that takes too long or too much memory here costs this thread only: the
// compiler ends it at its deadline and starts another.

export interface CompileRequest {
  id: number;
  schemaJson: string;
}

export type CompileReply =
  | { id: number; problem: string }
  | { id: number; code: string; cachedData: Uint8Array; bytes: number };

/** The thread's first message, once its modules are loaded: compiles sent from now on start at once. */
export interface ThreadReady {
  ready: true;
}

function compile({ id, schemaJson }: CompileRequest): CompileReply {
  const schema = JSON.parse(schemaJson) as unknown;
  const problem = schemaProblem(schema);
  if (problem) return { id, problem };
  let source: string;
  try {
    source = validatorSource(schema as object);
  } catch (error) {
    return { id, problem: (error as Error).message };
  }
  const code = wrapValidatorSource(source);
  const { validate, script } = loadValidator(code);
  // One call compiles the validator's main function, so the cached data carries it compiled: the event
  // loop then runs it without compiling it first. Any answer will do, within a small budget.
  try {
    withinBudget(2, () => validate({}));
  } catch {
    // Over budget on `{}`: the function is compiled all the same.
  }
  const cachedData = script.createCachedData();
  const bytes = code.length + cachedData.length;
  if (bytes > MAX_VALIDATOR_BYTES)
    return {
      id,
      problem: `schema compiles to ${bytes} bytes of validator code; at most ${MAX_VALIDATOR_BYTES}: split it into smaller schemas or simplify it`,
    };
  return { id, code, cachedData, bytes };
}

parentPort!.on('message', (request: CompileRequest) => {
  let reply: CompileReply;
  try {
    reply = compile(request);
  } catch (error) {
    // A schema that breaks the compiler (its stack, say) is refused like any other that cannot compile.
    reply = { id: request.id, problem: `schema does not compile: ${(error as Error).message}` };
  }
  parentPort!.postMessage(reply, 'cachedData' in reply ? [reply.cachedData.buffer as ArrayBuffer] : []);
});
parentPort!.postMessage({ ready: true } satisfies ThreadReady);
