#!/usr/bin/env node
// The `herald` command: the compiled service (dist/, made by `npm run build`, which `npm ci` runs).
import { existsSync } from 'node:fs';

const main = new URL('../dist/main.js', import.meta.url);
if (!existsSync(main)) {
  console.error('herald: dist/ is missing: run `npm run build` (npm ci runs it) in the checkout first');
  process.exit(1);
}
process.setSourceMapsEnabled(true);
await import(main.href);
