import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../support/paths.js';

// The README shows the console and the portal (`npm run screenshots` takes the pictures): at most four, each
// a PNG under 200 KB that is in docs/images/, and nothing in docs/images/ that the README does not show.
test('the README shows at most four screenshots, each a PNG under 200 KB kept in docs/images/', () => {
  const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  const shown = [...readme.matchAll(/!\[[^\]]+\]\((docs\/images\/[^)]+)\)/g)].map((match) => match[1]!);
  assert.ok(shown.length >= 1 && shown.length <= 4, `${shown.length} screenshots`);
  for (const path of shown) {
    const file = join(REPO_ROOT, path);
    assert.ok(statSync(file).size < 200 * 1024, `${path} is under 200 KB`);
    assert.deepEqual([...readFileSync(file).subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], `${path} is a PNG`);
  }
  const kept = readdirSync(join(REPO_ROOT, 'docs', 'images')).map((name) => `docs/images/${name}`);
  assert.deepEqual(kept.sort(), [...new Set(shown)].sort());
});
