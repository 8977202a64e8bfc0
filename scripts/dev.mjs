#!/usr/bin/env node
// `npm run dev`: compiles src/ to dist/ again after every change (esbuild's watch mode) and restarts the
// service on the new files (node --watch). Arguments after `--` replace `serve`.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const build = spawn(process.execPath, ['scripts/build.mjs', '--watch'], {
  cwd: root,
  stdio: ['ignore', 'pipe', 'inherit'],
});
// The service starts once the first build is written.
build.stdout.once('data', (chunk) => {
  process.stdout.write(chunk);
  build.stdout.pipe(process.stdout);
  const args = process.argv.length > 2 ? process.argv.slice(2) : ['serve'];
  const service = spawn(process.execPath, ['--enable-source-maps', '--watch-path=dist', 'dist/main.js', ...args], {
    cwd: root,
    stdio: 'inherit',
  });
  const stop = (signal) => {
    service.kill(signal);
    build.kill(signal);
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  service.on('exit', (code) => {
    build.kill();
    process.exit(code ?? 0);
  });
});
