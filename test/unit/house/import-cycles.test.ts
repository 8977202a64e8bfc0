import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../../support/paths.js';
import { importCycles, importGraph } from '../../support/import-graph.js';

// No module of src/ imports itself through others, type-only imports included: each folder's modules can
// be read, tested and moved in the order they import each other, and a rule shared by two modules lives in
// a third that both import. The graph is read from the sources (test/support/import-graph.ts).

test('src/ has no import cycle', () => {
  const graph = importGraph(join(REPO_ROOT, 'src'));
  // The scanner reads the tree: the service's entry imports its configuration, the port its drivers' types.
  assert.ok(graph.get('main.ts')?.includes('config.ts'), 'main.ts imports config.ts');
  assert.ok(graph.get('store/queue/index.ts')?.includes('store/queue/types.ts'), 'a type-only re-export is an edge');
  const cycles = importCycles(graph).map((cycle) => cycle.join(' -> '));
  assert.deepEqual(cycles, [], `import cycles in src/:\n  ${cycles.join('\n  ')}`);
});

test('the scanner finds a cycle, and not imports that comments or template strings only mention', () => {
  const dir = mkdtempSync(join(tmpdir(), 'herald-import-graph-'));
  try {
    writeFileSync(
      join(dir, 'a.ts'),
      "import { b } from './b.js';\nimport type { C } from './c.js';\nexport const a = b;\n",
    );
    writeFileSync(join(dir, 'b.ts'), "export const b = 1;\nexport const later = () => import('./a.js');\n");
    writeFileSync(
      join(dir, 'c.ts'),
      [
        "// import { a } from './a.js';",
        "/* export * from './a.js'; */",
        'export const PAGE = `<script type="module">import { a } from \'./a.js\';</script>`;',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: source text for the scanner, with placeholders
        'export const NESTED = `${`import(\'./a.js\')`} and ${"./a.js"}`;',
        'export type C = string;',
        '',
      ].join('\n'),
    );
    const graph = importGraph(dir);
    assert.deepEqual(graph.get('a.ts'), ['b.ts', 'c.ts'], 'a static and a type-only import');
    assert.deepEqual(graph.get('b.ts'), ['a.ts'], 'a dynamic import');
    assert.deepEqual(graph.get('c.ts'), [], 'c.ts only mentions a.ts');
    assert.deepEqual(importCycles(graph), [['a.ts', 'b.ts', 'a.ts']]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
