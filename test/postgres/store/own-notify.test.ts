import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Store } from '../../../src/store/index.js';
import { eventually } from '../../support/receiver.js';
import { openStore } from '../../support/store.js';

// A process that emits wakes its own worker in process; the NOTIFY it sends is for the other processes.
// Its own listener must not wake the worker a second time for it (that was a second claim per batch).

test("a process's own NOTIFY does not wake its worker again; another process's does", {
  timeout: 60_000,
}, async (t) => {
  const { store: mine, config, scope, appId, closeFirst } = await openStore(t);
  const other = await Store.open(config);
  closeFirst(() => other.close());
  const emitThrough = (store: Store) =>
    store.messages.emit({ scope, appId, eventType: 'invoice.paid', payloadJson: '{}', idempotencyKey: null });

  mine.listen();
  await eventually(async () => mine.listening, 10_000, 'LISTEN in place');
  await new Promise((resolve) => setTimeout(resolve, 100)); // the wake-up that follows each (re)connect
  let wakes = 0;
  mine.events.on('queued', () => wakes++);

  assert.ok((await emitThrough(mine)).ok);
  assert.equal(wakes, 1, 'woken in process when the emit committed');
  await new Promise((resolve) => setTimeout(resolve, 500)); // time for its NOTIFY to come back
  assert.equal(wakes, 1, 'its own NOTIFY did not wake it again');

  assert.ok((await emitThrough(other)).ok);
  await eventually(async () => wakes === 2, 5_000, "the other process's NOTIFY");
});
