import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

// The queue owns its rows: no code outside src/store/queue/ names `delivery_tasks` (besides the table's
// shape and its migrations), so every change to a queued attempt goes through the queue's operations.

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.(ts|mts|mjs)$/.test(name) ? [path] : [];
  });
}

const OWNERS = [join('src', 'store', 'queue'), join('src', 'store', 'migrations'), join('src', 'store', 'schema.ts')];

test('only src/store/queue/ names delivery_tasks in code', () => {
  const found: string[] = [];
  for (const file of sources('src')) {
    if (OWNERS.some((owner) => file.startsWith(owner))) continue;
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        const code = line.trim();
        if (code.startsWith('//') || code.startsWith('*') || code.startsWith('/*')) return;
        if (code.includes('delivery_tasks')) found.push(`${file}:${i + 1}: ${code}`);
      });
  }
  assert.deepEqual(found, []);
});

test('a delivery next attempt time is not stored: the store names it only where it reads it from the tasks', () => {
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
