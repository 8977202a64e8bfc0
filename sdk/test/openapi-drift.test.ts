import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../test/support/paths.js';
import { startTestService } from '../../test/support/service.js';
import { typesFromOpenapi } from '../scripts/openapi-types.js';

// The SDK's types are generated from the served OpenAPI document and checked in: when a route's schema
// changes, this fails until `npm run generate -w herald-sdk` writes them again.

test('src/openapi.ts is what the served GET /api/v1/openapi.json generates', async (t) => {
  const service = await startTestService({ HERALD_ROLE: 'api' });
  t.after(() => service.stop());
  const response = await fetch(`${service.url}/api/v1/openapi.json`);
  assert.equal(response.status, 200);
  const generated = await typesFromOpenapi(await response.json());
  const checkedIn = readFileSync(join(REPO_ROOT, 'sdk/src/openapi.ts'), 'utf8');
  assert.ok(
    generated === checkedIn,
    'sdk/src/openapi.ts differs from the types of the served document: run `npm run generate -w herald-sdk`',
  );
});
