import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';

test('the last lines logged before the process exits are all written, however long', async () => {
  // The service's log destination writes asynchronously; an exit while a write is under way would cut it
  // (a pipe takes 64 KB at a time, so a 1 MB line is many writes). logsWritten waits for them, and what
  // is logged after it is dropped.
  const code = `
    const { createLogger, logsWritten } = await import(${JSON.stringify(new URL('../../../src/service.js', import.meta.url).href)});
    const logger = createLogger({ logLevel: 'info' });
    logger.info({ big: 'x'.repeat(1 << 20) }, 'big');
    logger.info('last');
    await logsWritten(logger);
    logger.warn('after'); // dropped, not thrown: something still under way may log during the exit
    process.exit(0);
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exitCode = await new Promise((resolve) => child.once('close', resolve));
  assert.equal(exitCode, 0);
  const lines = output
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { msg: string; big?: string });
  assert.deepEqual(
    lines.map((line) => line.msg),
    ['big', 'last'],
  );
  assert.equal(lines[0]!.big!.length, 1 << 20);
});
