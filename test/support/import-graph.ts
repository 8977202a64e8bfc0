import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

// The import graph of a source tree, read by a small scanner rather than the compiler: every module's
// (`.ts`, `.mts`, `.mjs`) static imports and re-exports (`import type` included: a type-only edge still ties
// two modules together) and its dynamic `import('…')` of a literal, with relative specifiers resolved to
// the tree's files.

/** Characters after which a `/` starts a regular expression rather than a division. */
const BEFORE_REGEXP = new Set('(,=:[!&|?{};+-*%<>~^'.split(''));
const KEYWORDS_BEFORE_REGEXP = /\b(?:return|typeof|case|do|else|in|of|void|yield|await|delete|throw|new)$/;

/**
 * `source` with comments, the text of template strings and regular expressions blanked (their lengths
 * kept), so specifier-like text inside them is not read as an import. A template string's `${…}`
 * expressions stay, since they are code; quoted strings stay, since specifiers are quoted strings.
 */
export function codeOnly(source: string): string {
  const out = source.split('');
  const blank = (from: number, to: number) => {
    for (let i = from; i < to; i++) if (out[i] !== '\n') out[i] = ' ';
  };
  // Each open template string, by the depth of `{` its current `${` expression has reached.
  const templates: number[] = [];
  let depth = 0;
  let i = 0;
  /** Skips a template string's text from `i` up to its end or its next `${`. */
  const templateText = () => {
    const start = i;
    while (i < source.length) {
      const c = source[i];
      if (c === '\\') i += 2;
      else if (c === '`') {
        blank(start, i);
        i++;
        return;
      } else if (c === '$' && source[i + 1] === '{') {
        blank(start, i);
        i += 2;
        templates.push(depth);
        depth++;
        return;
      } else i++;
    }
    blank(start, i);
  };
  while (i < source.length) {
    const c = source[i]!;
    const next = source[i + 1];
    if (c === '/' && next === '/') {
      const end = source.indexOf('\n', i);
      const stop = end === -1 ? source.length : end;
      blank(i, stop);
      i = stop;
    } else if (c === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2);
      const stop = end === -1 ? source.length : end + 2;
      blank(i, stop);
      i = stop;
    } else if (c === '/' && regexpMayStart(source, i)) {
      const start = i;
      let inClass = false;
      i++;
      while (i < source.length && source[i] !== '\n') {
        const r = source[i];
        if (r === '\\') i++;
        else if (r === '[') inClass = true;
        else if (r === ']') inClass = false;
        else if (r === '/' && !inClass) break;
        i++;
      }
      i++;
      blank(start, i);
    } else if (c === "'" || c === '"') {
      // A quoted string ends at its quote or, unterminated, at the end of its line.
      i++;
      while (i < source.length && source[i] !== c && source[i] !== '\n') i += source[i] === '\\' ? 2 : 1;
      i++;
    } else if (c === '`') {
      i++;
      templateText();
    } else if (c === '{') {
      depth++;
      i++;
    } else if (c === '}') {
      depth--;
      i++;
      if (templates.length > 0 && templates[templates.length - 1] === depth) {
        templates.pop();
        templateText();
      }
    } else i++;
  }
  return out.join('');
}

/** Whether the `/` at `at` starts a regular expression: it follows an operator, an opener or a keyword. */
function regexpMayStart(source: string, at: number): boolean {
  let j = at - 1;
  while (j >= 0 && /\s/.test(source[j]!)) j--;
  if (j < 0) return true;
  if (BEFORE_REGEXP.has(source[j]!)) return true;
  return KEYWORDS_BEFORE_REGEXP.test(source.slice(Math.max(0, j - 9), j + 1));
}

/** An import clause: a default name, `* as name`, `{ … }`, or a default name with one of the other two. */
const CLAUSE = String.raw`(?:\*(?:\s+as\s+[\w$]+)?|\{[^}]*\}|[\w$]+(?:\s*,\s*(?:\{[^}]*\}|\*\s+as\s+[\w$]+))?)`;
const SPECIFIER_PATTERNS = [
  // import x from '…', import type { x } from '…', export * from '…', export type { x } from '…'
  new RegExp(String.raw`\b(?:import|export)\s+(?:type\s+)?${CLAUSE}\s*from\s*(['"])([^'"\n]+)\1`, 'g'),
  // import '…' (for its effects)
  /\bimport\s*(['"])([^'"\n]+)\1/g,
  // import('…'), awaited or not
  /\bimport\s*\(\s*(['"])([^'"\n]+)\1\s*\)/g,
];

/** The module specifiers a source file imports or re-exports from, in no particular order. */
export function importSpecifiers(source: string): string[] {
  const code = codeOnly(source);
  const found = new Set<string>();
  for (const pattern of SPECIFIER_PATTERNS) {
    for (const match of code.matchAll(pattern)) found.add(match[2]!);
  }
  return [...found];
}

/** Every module under `dir` (`.ts`, `.mts`, `.mjs`; not declaration files), as absolute paths. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.(ts|mts|mjs)$/.test(name) && !/\.d\.m?ts$/.test(name) ? [path] : [];
  });
}

/**
 * The import graph of the modules under `root`: each file (relative to root) with the files it imports
 * there. A relative specifier names the compiled file (`./x.js`), so it resolves to the source beside it
 * (`./x.ts`; `./x.mjs` to itself or `./x.mts`); bare specifiers (packages, node:) and paths outside the
 * tree are not edges.
 */
export function importGraph(root: string): Map<string, string[]> {
  const files = sourceFiles(root);
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const targets = new Set<string>();
    for (const specifier of importSpecifiers(readFileSync(file, 'utf8'))) {
      if (!specifier.startsWith('.')) continue;
      const named = resolve(dirname(file), specifier);
      const target = [named, named.replace(/\.js$/, '.ts'), named.replace(/\.mjs$/, '.mts')].find((path) =>
        known.has(path),
      );
      if (target) targets.add(relative(root, target));
    }
    graph.set(relative(root, file), [...targets].sort());
  }
  return graph;
}

/**
 * The import cycles of a graph: one per strongly connected component of more than one file (or of a file
 * that imports itself), as the path that goes round it and back to its first file.
 */
export function importCycles(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  for (const component of stronglyConnected(graph)) {
    const [first] = component;
    if (component.length === 1 && !graph.get(first!)?.includes(first!)) continue;
    cycles.push(cycleThrough(graph, new Set(component), first!));
  }
  return cycles;
}

/** Tarjan's strongly connected components, each sorted by name. */
function stronglyConnected(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  let counter = 0;
  const visit = (node: string) => {
    index.set(node, counter);
    low.set(node, counter);
    counter++;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      components.push(component.sort());
    }
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return components;
}

/** The shortest path from `start` back to itself inside `component` (breadth first). */
function cycleThrough(graph: Map<string, string[]>, component: Set<string>, start: string): string[] {
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const next of graph.get(node) ?? []) {
      if (!component.has(next)) continue;
      if (next === start) {
        const path = [start];
        for (let at = node; at !== start; at = previous.get(at)!) path.unshift(at);
        path.unshift(start);
        return path;
      }
      if (!previous.has(next)) {
        previous.set(next, node);
        queue.push(next);
      }
    }
  }
  return [start];
}
