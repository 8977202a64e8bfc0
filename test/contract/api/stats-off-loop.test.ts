import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, type Client } from '../../support/client.js';
import { createApp, createEndpoint } from '../../support/api.js';
import { loopProbe } from '../../support/loop-probe.js';
import { historyRows } from '../../support/history-rows.js';

// Stats whose cost grows with a tenant's history do not hold the event loop every tenant shares (issue 42,
// finding 3): with 100,086 attempts over 300 event types in the last 30 days, an application's stats and
// its endpoint's stats (native and Svix) answer the exact counts while the loop stays free.

/**
 * The longest the event loop may be held while the stats are read: on the loop, three reads in a row take
 * about a second here; off it, a few tens of milliseconds on a quiet machine. The margin is for the rest of
 * the suite, which runs three other files beside this one on two cores: the process waits for a core, and
 * collects the garbage of three month-long reads, and neither is the read holding the loop.
 */
const MAX_LOOP_DELAY_MS = 400;
const DAY = 86_400_000;
const ATTEMPTS = 100_086;
const TYPES = 300;

let service: TestService;
let api: Client;
let appId: string;
let endpointId: string;
const { staysResponsive } = loopProbe(() => service.url, MAX_LOOP_DELAY_MS);

before(async () => {
  service = await startTestService({ HERALD_ROLE: 'api' });
  ({ test: api } = await bootstrap(service.url));
  const app = await createApp(api);
  appId = app.id as string;
  endpointId = (await createEndpoint(api, appId)).id;
  // The history, written straight to the store: a month of traffic made through the API takes too long.
  const db = service.store.ctx.db;
  const now = Date.now();
  const org = (await db.selectFrom('applications').select('org_id').where('id', '=', appId).executeTakeFirstOrThrow())
    .org_id;
  const pad = (n: number) => String(n).padStart(20, '0');
  // One message and one delivery per attempt, as first attempts that succeed or fail are.
  for (let i = 0; i < ATTEMPTS; i += 1_000) {
    const batch = Array.from({ length: Math.min(1_000, ATTEMPTS - i) }, (_, k) =>
      historyRows({
        orgId: org,
        appId,
        endpointId,
        messageId: `evt_${pad(i + k)}`,
        deliveryId: `dlv_${pad(i + k)}`,
        attemptId: `atmpt_${pad(i + k)}`,
        eventType: `stats.type${(i + k) % TYPES}`,
        failed: (i + k) % 10 === 0,
        at: now - 29 * DAY + Math.floor(((i + k) * 29 * DAY) / ATTEMPTS),
        durationMs: (i + k) % 500,
      }),
    );
    await db
      .insertInto('messages')
      .values(batch.map((rows) => rows.message))
      .execute();
    await db
      .insertInto('deliveries')
      .values(batch.map((rows) => rows.delivery))
      .execute();
    await db
      .insertInto('attempts')
      .values(batch.flatMap((rows) => (rows.attempt ? [rows.attempt] : [])))
      .execute();
  }
});
after(async () => service?.stop());

test('a month of stats over 100,086 attempts answers exact counts without holding the event loop', async () => {
  const since = new Date(Date.now() - 30 * DAY).toISOString();
  // Three readers at once, as a dashboard's tabs would be: on the event loop they would hold it for three
  // reads in a row.
  const totals: number[] = [];
  await staysResponsive('application stats over a month', async () => {
    const replies = await Promise.all(
      [1, 2, 3].map(() => api.get(`/api/v1/applications/${appId}/stats?since=${since}`)),
    );
    for (const reply of replies) {
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      totals.push(
        reply.body.event_types.reduce(
          (sum: number, t: { success: number; failure: number }) => sum + t.success + t.failure,
          0,
        ) +
          reply.body.other.success +
          reply.body.other.failure,
      );
    }
  });
  for (const total of totals) assert.equal(total, ATTEMPTS);
  await staysResponsive('endpoint stats over a month', async () => {
    const replies = await Promise.all([
      api.get(`/api/v1/endpoints/${endpointId}/stats?since=${since}`),
      api.get(`/api/v1/endpoints/${endpointId}/stats?since=${since}`),
      api.get(`/api/v1/app/${appId}/endpoint/${endpointId}/stats?since=${since}`),
    ]);
    for (const reply of replies) assert.equal(reply.status, 200, JSON.stringify(reply.body));
  });
});
