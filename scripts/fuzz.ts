// npm run fuzz -- [--runs N] [--seed S] [--path P] [--store sqlite|postgres]: runs the OpenAPI fuzzer
// (test/support/fuzz.ts) against a fresh service on the store named (sqlite unless given). A failure prints
// the smallest request found and the seed and path that replay it.
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '2000' },
    seed: { type: 'string' },
    path: { type: 'string' },
    store: { type: 'string', default: 'sqlite' },
  },
});
// The test support reads the store when it is first loaded.
process.env.SUITE_STORE = values.store;
const { fuzz, startWorld } = await import('../test/support/fuzz.js');
const world = await startWorld();
try {
  const seed = values.seed === undefined ? Date.now() % 2 ** 31 : Number(values.seed);
  console.log(`fuzzing ${world.operations.length} operations: ${values.runs} runs, seed ${seed}`);
  const result = await fuzz(world, {
    numRuns: Number(values.runs),
    seed,
    ...(values.path !== undefined ? { path: values.path } : {}),
  });
  console.log('answers by operation and status:');
  for (const [key, count] of [...result.seen].sort()) console.log(`  ${key}: ${count}`);
  if (result.failed) {
    console.log(`counterexample after ${result.numRuns} runs (${result.numShrinks} shrinks):`);
    console.log(JSON.stringify(result.counterexample?.[0], null, 2));
    console.log(String(result.errorInstance));
    console.log(`replay: npm run fuzz -- --seed ${result.seed} --path ${result.counterexamplePath} --runs 1`);
    process.exitCode = 1;
  } else {
    console.log(`${result.numRuns} runs held every invariant`);
  }
} finally {
  await world.stop();
}
