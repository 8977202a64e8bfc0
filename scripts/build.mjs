#!/usr/bin/env node
// Compiles Herald's TypeScript to JavaScript with esbuild, one output file per source file (no bundling),
// so the files keep the layout they import each other by and worker threads find their entries beside them.
// esbuild only strips types: `npm run typecheck` (tsc --noEmit) is what checks them.
//
//   node scripts/build.mjs            src/ → dist/ (the service, the CLI, the worker-thread entries, and the
//                                     console's and portal's browser scripts, which are strings in src/)
//   node scripts/build.mjs --tests    src/, test/, bench/, scripts/ and sdk/ → .build/, the tree that
//                                     `npm test`, `npm run bench`, fuzz and chaos run (tests import src/ by
//                                     relative paths, so src/ is compiled beside them); SUITE_BUILD names
//                                     another folder of the checkout for the tree
//   node scripts/build.mjs --all      both trees, side by side (the test runner and scripts/run.mjs)
//   node scripts/build.mjs --watch    dist/ again after every change under src/ (`npm run dev`)
//
// Source maps are written beside each file and the processes run with --enable-source-maps, so stack traces
// name src/ lines.
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));

/**
 * Packages loaded as one file each: esbuild bundles each into `vendor/<name>.js` of the tree, and every
 * import of the package in the tree names that file. Both ship hundreds of small ES modules (kysely 264,
 * typebox 374), and a process, or a worker thread, that loads them as they ship spends about 0.2 s of CPU
 * finding, reading and compiling files; the test suite starts hundreds of such processes and threads, and
 * a worker process starts that much sooner. Only `import { … } from "<name>"` is vendored: the build stops
 * at any other import of them. Each is imported by its bare name only and by no other
 * dependency at run time (@fastify/type-provider-typebox is imported for its types alone), so the tree
 * holds one copy of each.
 */
const VENDORED = ['kysely', 'typebox'];

/** What every esbuild run here shares: ES modules for Node 20, each with its source map. */
const COMPILED = {
  absWorkingDir: root,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
};

const options = (dirs, outdir, outbase) => ({
  ...COMPILED,
  entryPoints: dirs.map((dir) => `${dir}/**/*.ts`),
  outdir,
  outbase,
  bundle: false,
});

/** The vendored packages' bundles, written into `outdir/vendor/`. */
const vendor = (outdir) => ({
  ...COMPILED,
  entryPoints: Object.fromEntries(VENDORED.map((name) => [`vendor/${name}`, name])),
  outdir,
  bundle: true,
});

/** An import of a vendored package as the build rewrites it, and any import of one at all (a subpath, `import(…)`). */
const VENDORED_IMPORT = new RegExp(`from "(${VENDORED.join('|')})";`, 'g');
const ANY_VENDORED_IMPORT = new RegExp(`(from|import)\\s*\\(?\\s*["'](${VENDORED.join('|')})(/[^"']*)?["']`);

/**
 * Compiles `build`'s files and writes them, each import of a vendored package naming the path from the
 * importing file to its bundle (esbuild leaves imports as written when it does not bundle).
 */
async function writeTree(build) {
  const { outputFiles } = await esbuild.build({ ...build, write: false });
  for (const file of outputFiles) {
    mkdirSync(dirname(file.path), { recursive: true });
    if (!file.path.endsWith('.js')) {
      writeFileSync(file.path, file.contents);
      continue;
    }
    const text = file.text.replace(VENDORED_IMPORT, (_, name) => {
      const path = relative(dirname(file.path), join(build.outdir, 'vendor', `${name}.js`));
      return `from "${path.startsWith('.') ? path : `./${path}`}";`;
    });
    // Any other form would load a second copy from node_modules.
    const missed = ANY_VENDORED_IMPORT.exec(text);
    if (missed)
      throw new Error(`${relative(build.outdir, file.path)}: import ${missed[0]} is not of a vendored package's form`);
    writeFileSync(file.path, text);
  }
}

/**
 * Writes a tree into a fresh folder beside `out`, then puts it in `out`'s place: no file of a deleted
 * source stays behind, and a process running from `out` meanwhile (another test run) never finds it half
 * written.
 */
async function replace(out, build) {
  const fresh = `${out}.new-${process.pid}`;
  const old = `${out}.old-${process.pid}`;
  rmSync(fresh, { recursive: true, force: true });
  try {
    await Promise.all([writeTree({ ...build, outdir: fresh }), esbuild.build(vendor(fresh))]);
  } catch (error) {
    rmSync(fresh, { recursive: true, force: true });
    throw error;
  }
  if (existsSync(out)) renameSync(out, old);
  renameSync(fresh, out);
  rmSync(old, { recursive: true, force: true });
}

const mode = process.argv[2] ?? '';
const dist = join(root, 'dist');
// dist/ holds src/'s files at its root: dist/main.js is src/main.ts.
const service = options(['src'], dist, 'src');
const tests = () =>
  replace(
    join(root, process.env.SUITE_BUILD || '.build'),
    options(['src', 'test', 'bench', 'scripts', 'sdk/src', 'sdk/test', 'sdk/scripts'], '', '.'),
  );
if (mode === '--tests') await tests();
else if (mode === '--all') await Promise.all([replace(dist, service), tests()]);
else if (mode === '--watch') {
  // Watching writes every file as esbuild compiles it: the vendored packages load as they ship.
  const context = await esbuild.context(service);
  await context.watch();
  console.log(`esbuild: watching src/, writing ${relative(process.cwd(), dist) || '.'}`);
} else await replace(dist, service);
