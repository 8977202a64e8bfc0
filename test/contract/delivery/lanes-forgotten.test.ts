import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { DeliveryWorker } from '../../../src/delivery/worker.js';
import { eventually, Receiver } from '../../support/receiver.js';
import { openStore } from '../../support/store.js';

// A worker keeps a lane only for the endpoints it holds attempts of (or has paused): once their backlogs are
// delivered, through general claims and top-ups, no lane is left, so its memory does not grow with the
// number of endpoints it has ever served.

test('lanes are forgotten once their endpoints have nothing left here', { timeout: 60_000 }, async (t) => {
  const receiver = await new Receiver().start();
  // Two in flight per endpoint and two waves held: a backlog of 12 comes in top-ups.
  const { store, config, emit, scope, appId, closeFirst } = await openStore(
    t,
    { HERALD_ENDPOINT_CONCURRENCY: '2' },
    `${receiver.url}/hook`,
  );
  closeFirst(() => receiver.stop());
  for (let i = 0; i < 4; i++) await store.endpoints.create(scope, { appId, url: `${receiver.url}/hook` });
  await emit(12);
  const worker = new DeliveryWorker(store, config, pino({ level: 'silent' }), store.queue);
  closeFirst(() => worker.stop());
  worker.start();
  await receiver.waitFor(60, 30_000);
  await eventually(async () => worker.busy === 0, 10_000, 'every outcome recorded');
  assert.equal(worker.lanesHeld, 0, 'no lane left');
});
