#!/usr/bin/env node
// The `herald` command: runs src/main.ts through tsx, so no build step is needed.
import { register } from 'tsx/esm/api';
register();
await import('../src/main.ts');
