import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import { startService } from '../../src/service.js';
import { typesFromOpenapi } from './openapi-types.js';

// Writes src/openapi.ts from the document a Herald API serves: this checkout's, started in-process on a
// random loopback port over an empty store in a temporary directory, then stopped.

const dataDir = mkdtempSync(join(tmpdir(), 'herald-sdk-generate-'));
try {
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', HERALD_ROLE: 'api', HERALD_DATA_DIR: dataDir });
  const service = await startService(config, pino({ level: 'silent' }));
  try {
    const response = await fetch(`${service.url}/api/v1/openapi.json`);
    if (!response.ok) throw new Error(`GET /api/v1/openapi.json answered ${response.status}`);
    // Run compiled from .build/sdk/scripts/ (scripts/run.mjs): the checkout is three folders up.
    const target = fileURLToPath(new URL('../../../sdk/src/openapi.ts', import.meta.url));
    writeFileSync(target, await typesFromOpenapi(await response.json()));
    console.log(`wrote ${target}`);
  } finally {
    await service.close();
  }
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
