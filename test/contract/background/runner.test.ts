import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { loadConfig } from '../../../src/config.js';
import { Store } from '../../../src/store/index.js';
import { BackgroundRunner } from '../../../src/background/runner.js';
import type { BackgroundTasks } from '../../../src/store/background-tasks.js';
import { createTestDatabase } from '../../support/service.js';

// The background runner's own life: a stop asked for while it looks for a task ends it as soon as that
// look returns, not after its next poll (a service's shutdown waits for it).

test('a runner stopped while it looks for a task stops when the look returns, without waiting a poll', async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  const store = await Store.open(
    loadConfig({ HERALD_SECRET_KEY: 'test-secret-key-that-is-long-enough-0123456789', ...database.env }),
  );
  t.after(() => store.close());
  // The store's real lease, held until the test lets it go: the stop comes while it is under way.
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let looked = 0;
  const tasks = Object.create(store.backgroundTasks) as BackgroundTasks;
  tasks.lease = async (owner, leaseMs) => {
    looked += 1;
    await gate;
    return store.backgroundTasks.lease(owner, leaseMs);
  };
  const runner = new BackgroundRunner(tasks, pino({ level: 'silent' }));
  runner.start();
  assert.equal(looked, 1);
  let stopped = false;
  const stopping = runner.stop().then(() => (stopped = true));
  release();
  // A poll is a second: the stop must not take one.
  const poll = new Promise((resolve) => setTimeout(resolve, 900, 'poll'));
  assert.equal(await Promise.race([stopping.then(() => 'stopped'), poll]), 'stopped');
  assert.ok(stopped);
  assert.equal(looked, 1, 'it looked once, and not again after the stop');
});
