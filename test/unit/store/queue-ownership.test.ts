import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { QUEUE_COLUMNS } from '../../../src/store/queue/columns.js';

// The queue owns its columns: a delivery's queue lives on its row (src/domain/queue-slot.ts), and no code
// outside src/store/queue/ names those columns (besides the rules that decide them, the table's shape and
// its migrations), so every change to a queued attempt goes through the queue's operations.

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.(ts|mts|mjs)$/.test(name) ? [path] : [];
  });
}

const OWNERS = [
  join('src', 'store', 'queue'),
  join('src', 'store', 'migrations'),
  join('src', 'store', 'schema.ts'),
  // The rules of a delivery's queue, and the planner that applies them to outcomes: they decide the
  // columns' values and read or write nothing.
  join('src', 'domain', 'queue-slot.ts'),
  join('src', 'domain', 'outcome-plan.ts'),
];

/**
 * Columns of the same names on other tables: background tasks have a lease of their own. Only the lease
 * columns are shared; a line of such a file naming any other queue column is still found.
 */
const OWN_LEASE = [join('src', 'store', 'background-tasks.ts')];
const LEASE = new Set(['lease_owner', 'lease_until']);

/** The lines of code (not comments) outside OWNERS that name a queue column or the old table. */
function namingQueueColumns(): string[] {
  const names = [...QUEUE_COLUMNS, 'delivery_tasks'];
  const found: string[] = [];
  for (const file of sources('src')) {
    if (OWNERS.some((owner) => file.startsWith(owner))) continue;
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        const code = line.trim();
        if (code.startsWith('//') || code.startsWith('*') || code.startsWith('/*')) return;
        const named = names.filter((name) => new RegExp(`\\b${name}\\b`).test(code));
        const foreign = OWN_LEASE.includes(file) ? named.filter((name) => !LEASE.has(name)) : named;
        if (foreign.length > 0) found.push(`${file}:${i + 1}: ${code}`);
      });
  }
  return found;
}

test("only src/store/queue/ names a delivery's queue columns in code", () => {
  // The check finds what it looks for: the queue's own files name every column.
  const queueCode = sources(join('src', 'store', 'queue'))
    .map((file) => readFileSync(file, 'utf8'))
    .join('\n');
  for (const name of QUEUE_COLUMNS) assert.match(queueCode, new RegExp(`\\b${name}\\b`), name);
  assert.deepEqual(namingQueueColumns(), []);
});

test('no module outside src/store/queue/ imports a file of it but its front door (index.ts)', () => {
  const queue = join('src', 'store', 'queue');
  const found: string[] = [];
  let imports = 0;
  for (const file of sources('src')) {
    if (file.startsWith(`${queue}/`)) continue;
    for (const [, from] of readFileSync(file, 'utf8').matchAll(/(?:from|import\()\s*'([^']+)'/g)) {
      if (!from!.startsWith('.')) continue;
      const target = join(file, '..', from!);
      if (!target.startsWith(`${queue}/`)) continue;
      imports++;
      if (target !== join(queue, 'index.js')) found.push(`${file}: ${from}`);
    }
  }
  assert.ok(imports > 0, 'the store imports the queue');
  assert.deepEqual(found, []);
});

test("a delivery's next attempt time is not stored: the store names it only where it reads it from the queue columns", () => {
  const found: string[] = [];
  for (const file of sources(join('src', 'store'))) {
    if (file.startsWith(join('src', 'store', 'migrations'))) continue;
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (line.includes('next_attempt_at')) found.push(`${file}:${i + 1}: ${line.trim()}`);
      });
  }
  assert.deepEqual(
    found.map((line) => line.split(':')[0]),
    [join('src', 'store', 'deliveries.ts'), join('src', 'store', 'deliveries.ts')],
    found.join('\n'),
  );
});
