import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../test/support/paths.js';

// What a user of the workspace gets from `import ... from 'herald-sdk'`: the built package (sdk/dist,
// written by the root prepare script on npm ci), with no runtime dependencies.

test("'herald-sdk' resolves to the built package and exports the client, the error and the verifier", async () => {
  const sdk = await import('herald-sdk');
  for (const name of ['Herald', 'HeraldError', 'Webhook', 'WebhookVerificationError', 'List'])
    assert.equal(typeof (sdk as Record<string, unknown>)[name], 'function', name);
  assert.match(import.meta.resolve('herald-sdk'), /\/sdk\/dist\/index\.js$/);
  const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'sdk/package.json'), 'utf8'));
  assert.equal(manifest.dependencies, undefined, 'no runtime dependencies');
  assert.equal(manifest.type, 'module');
});
