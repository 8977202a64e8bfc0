import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { setup, startReceiver } from '../../support/delivery.js';
import { emitMany } from '../../support/burst.js';
import { makeDue, perUnit, settledWork, type StoreWork } from '../../support/store-work.js';

// A guard that times nothing: the store work per delivery of a drain, read from the database's own counters
// and the statements the service sends. A change that adds a row or a statement to every delivery fails
// here on a quiet machine and a busy one alike. Each budget is what the delivery log does, with less than
// one unit of margin for what batching leaves to timing (how many attempts one claim or one outcome batch
// carries): a delivery's claim (its lease, on PostgreSQL a HOT update) and its own update (its queue
// emptied, which rewrites its due index entry, and its first attempt recorded on the row: no attempt row is
// inserted); a failed first attempt is a row, a retry adds an attempt row and an update, and its second
// claim finds the page fuller (a HOT update when there is room, else not).

const DELIVERIES = 1_000;

/** Most store work per delivery, by store: first tries that succeed, and deliveries that fail once first. */
const BUDGETS: Record<'sqlite' | 'postgres', Record<'firstTry' | 'retried', Partial<StoreWork>>> = {
  sqlite: {
    // One update per delivery (its first attempt's values bound, src/store/queue/sqlite.ts) and the batches'.
    firstTry: { statements: 2.0, changed: 2.5 },
    retried: { statements: 2.8, changed: 6.5 },
  },
  postgres: {
    firstTry: { statements: 0.9, inserted: 0.05, otherUpdated: 1.2, deleted: 0.05, changed: 2.5 },
    // A retried delivery's second claim is not HOT when its page has no room left (up to 3 updates that
    // rewrite indexes); a row added per delivery shows in `changed` whichever kind it is.
    retried: { statements: 1.0, inserted: 2.05, otherUpdated: 3.0, deleted: 0.05, changed: 6.5 },
  },
};

async function drain(t: import('node:test').TestContext, failFirst: boolean): Promise<StoreWork> {
  // The first attempts wait an hour: the backlog is all written, and the counters settled, before the
  // worker sees any of it; a retry goes at once.
  const s = await setup(t, { HERALD_RETRY_SCHEDULE: '1h,0s' });
  const receiver = await startReceiver(t);
  const failed = new Set<string>();
  receiver.respond = (request) => {
    const id = String(request.headers['webhook-id']);
    if (!failFirst || failed.has(id)) return { status: 204 };
    failed.add(id);
    return { status: 500 };
  };
  await s.endpoint(`${receiver.url}/hook`);
  assert.equal((await emitMany(s.api, s.appId, DELIVERIES, 8)).length, DELIVERIES);
  const db = s.service.store.ctx.db;
  const before = await settledWork(s.service);
  const due = await makeDue(s.service);
  s.service.store.events.emit('queued');
  await receiver.waitFor(failFirst ? 2 * DELIVERIES : DELIVERIES, 60_000);
  // The last outcomes are recorded a batch after their answers arrived.
  const delivered = async () =>
    Number(
      (await sql<{ n: number }>`select count(*) as n from deliveries where status = 'success'`.execute(db)).rows[0]!.n,
    );
  for (let i = 0; i < 100 && (await delivered()) < DELIVERIES; i++) await new Promise((r) => setTimeout(r, 50));
  const after = await settledWork(s.service);
  assert.equal(await delivered(), DELIVERIES);
  return perUnit(before, after, DELIVERIES, due);
}

function assertWithin(what: string, measured: StoreWork, budget: Partial<StoreWork>): void {
  // The figures, for the record of a run.
  console.log(`${what}: ${JSON.stringify(measured)}`);
  for (const [key, most] of Object.entries(budget))
    assert.ok(
      measured[key as keyof StoreWork] <= most,
      `${what}: ${key} ${measured[key as keyof StoreWork].toFixed(2)} per delivery, budget ${most}`,
    );
}

test('a first try that succeeds costs the store at most its budget of statements and rows', async (t) => {
  const work = await drain(t, false);
  assertWithin('first try', work, BUDGETS[storeOf()].firstTry);
});

test('a delivery that fails once and then succeeds costs at most its own budget', async (t) => {
  const work = await drain(t, true);
  assertWithin('retried', work, BUDGETS[storeOf()].retried);
});

function storeOf(): 'sqlite' | 'postgres' {
  return process.env.SUITE_STORE === 'postgres' ? 'postgres' : 'sqlite';
}
