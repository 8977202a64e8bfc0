// npm run chaos -- [--seconds N] [--store sqlite|postgres|both] [--seed S]: Herald as separate processes
// under a steady emit load while API and worker processes are SIGKILLed in a loop (and PostgreSQL is
// restarted once); then it settles and the invariants are checked (test/support/chaos.ts states them).
// Prints a report per store and exits 1 if an invariant was violated.
import { parseArgs } from 'node:util';
import { formatReport, runChaos, type ChaosStore } from '../test/support/chaos.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '120' },
    store: { type: 'string', default: 'both' },
    seed: { type: 'string' },
  },
});
const stores: ChaosStore[] =
  values.store === 'both'
    ? ['sqlite', 'postgres']
    : values.store === 'sqlite' || values.store === 'postgres'
      ? [values.store]
      : [];
const seconds = Number(values.seconds);
if (stores.length === 0 || !(seconds >= 10)) {
  console.error('usage: npm run chaos -- [--seconds N (at least 10)] [--store sqlite|postgres|both] [--seed S]');
  process.exit(2);
}
const seed = values.seed === undefined ? Date.now() % 2 ** 31 : Number(values.seed);
let violated = false;
for (const store of stores) {
  const report = await runChaos({ store, seconds, seed, log: (line) => console.log(`# ${line}`) });
  console.log(formatReport(report));
  if (report.violations.length > 0) violated = true;
}
if (violated) console.log(`replay: npm run chaos -- --seed ${seed} --seconds ${seconds} --store ${values.store}`);
process.exit(violated ? 1 : 0);
