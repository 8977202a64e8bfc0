import { readFileSync } from 'node:fs';

// Summarizes a V8 .cpuprofile (from node --cpu-prof, e.g. `npm run bench -- --profile`): the functions
// with the most self time, and the most inclusive time, with file:line.
// usage: node scripts/run.mjs bench/profile-summary.ts FILE [TOP] [SKIP_SECONDS]
// SKIP_SECONDS leaves out the start of the profile (module loading and set-up before the load).

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount: number;
  children?: number[];
}
interface Profile {
  nodes: Node[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const [file, topText, skipText] = process.argv.slice(2);
if (!file) {
  console.error('usage: node scripts/run.mjs bench/profile-summary.ts FILE [TOP]');
  process.exit(2);
}
const top = Number(topText ?? 25);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
// Time per sample from timeDeltas.
const selfUs = new Map<number, number>();
const skipUs = Number(skipText ?? 0) * 1e6;
let clock = 0;
profile.samples.forEach((id, i) => {
  clock += profile.timeDeltas[i] ?? 0;
  if (clock >= skipUs) selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);

const label = (n: Node) => {
  const url = n.callFrame.url
    .replace(/^file:\/\//, '')
    .replace(/.*\/node_modules\//, 'nm:')
    .replace(/.*\/work\/main\//, '');
  return `${n.callFrame.functionName || '(anonymous)'} ${url}:${n.callFrame.lineNumber + 1}`;
};
const self = new Map<string, number>();
const inclusive = new Map<string, number>();
for (const [id, us] of selfUs) {
  const node = byId.get(id)!;
  self.set(label(node), (self.get(label(node)) ?? 0) + us);
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const l = label(byId.get(cur)!);
    if (seen.has(l)) continue;
    seen.add(l);
    inclusive.set(l, (inclusive.get(l) ?? 0) + us);
  }
}
const show = (title: string, map: Map<string, number>) => {
  console.log(`\n${title} (of ${(total / 1e6).toFixed(2)} s sampled)`);
  for (const [l, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`${((100 * us) / total).toFixed(1).padStart(5)}%  ${l}`);
};
show('self time', self);
show('inclusive time', inclusive);
