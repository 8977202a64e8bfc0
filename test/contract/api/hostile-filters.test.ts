import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from '../../support/service.js';
import { bootstrap, type Client } from '../../support/client.js';
import { parseMetrics } from '../../support/scrape.js';
import { assertError, createApp } from '../../support/api.js';
import { loopProbe } from '../../support/loop-probe.js';
import { MAX_FILTER_LIST, MAX_FILTER_REGEXES } from '../../../src/domain/content-filter.js';

// One tenant's content filters cannot stall the process every tenant shares (issue 42, finding 1): the
// three inputs of the adversarial pass (regexes over a long string, `$all` over a long array, a thousand
// ordinary filters over a long list) are bounded when written and when run. At filter-test what runs out
// of HERALD_FILTER_BUDGET is a 400 naming it; at emit the endpoints whose filters could not be paid for
// receive the message (counted by herald_filters_unapplied_total), so nothing is dropped.

/**
 * The longest the event loop may be held while one input runs: unbounded, seconds. Issue 42's target of
 * 100 ms is measured on a quiet machine by `npm run bench -- --scenario hostile-filters`; the margin here
 * is for the rest of the suite, which runs beside this file on two cores.
 */
const MAX_LOOP_DELAY_MS = 300;
const NASTY = '[ab]*a[ab]{20,24}[cd]';

describe('hostile content filters', () => {
  let service: TestService;
  let api: Client;
  const { staysResponsive } = loopProbe(() => service.url, MAX_LOOP_DELAY_MS);

  before(async () => {
    service = await startTestService({ HERALD_ROLE: 'api' });
    ({ test: api } = await bootstrap(service.url));
  });
  after(async () => service?.stop());

  const unapplied = async () =>
    parseMetrics(await (await fetch(`${service.url}/metrics`)).text()).value('herald_filters_unapplied_total');

  async function filtered(appId: string, filter: object): Promise<string> {
    const reply = await api.post('/api/v1/endpoints', { app_id: appId, url: 'http://127.0.0.1:9/f', filter });
    assert.equal(reply.status, 201, JSON.stringify(reply.body));
    return reply.body.id;
  }

  async function emitted(appId: string, payload: object): Promise<string[]> {
    const reply = await api.post('/api/v1/messages', { app_id: appId, event_type: 'invoice.paid', payload });
    assert.equal(reply.status, 201, JSON.stringify(reply.body));
    return reply.body.delivery_ids;
  }

  test('regexes over a 400,000-character string: more than the most patterns is refused, the rest is bounded', async () => {
    const app = (await createApp(api)).id;
    const many = { $or: Array.from({ length: 92 }, () => ({ 'data.s': { $regex: NASTY } })) };
    for (const refused of [
      await api.post('/api/v1/endpoints', { app_id: app, url: 'http://127.0.0.1:9/f', filter: many }),
      await api.post(`/api/v1/endpoints/${await filtered(app, { type: 'x' })}/filter-test`, {
        payload: {},
        filter: { $or: many.$or.slice(0, MAX_FILTER_REGEXES + 1) },
      }),
    ])
      assertError(refused, 400, 'invalid_request', new RegExp(`at most ${MAX_FILTER_REGEXES}|bytes of JSON`));
    const most = { $or: Array.from({ length: MAX_FILTER_REGEXES }, () => ({ 'data.s': { $regex: NASTY } })) };
    const endpoint = await filtered(app, most);
    const s = 'ab'.repeat(200_000);
    const before = await unapplied();
    await staysResponsive('regexes over a long string', async () => {
      assertError(
        await api.post(`/api/v1/endpoints/${endpoint}/filter-test`, { payload: { s } }),
        400,
        'invalid_request',
        /budget of \d+ steps \(HERALD_FILTER_BUDGET\)/,
      );
      // The message reaches the endpoint whose filter it could not pay for (the other one's filter refuses
      // its event type within the budget).
      const [delivery, ...others] = await emitted(app, { s });
      assert.equal(others.length, 0);
      assert.equal((await api.get(`/api/v1/deliveries/${delivery}`)).body.endpoint_id, endpoint);
    });
    assert.ok((await unapplied()) > before);
    // A short string is judged by the filter as ever.
    assert.equal(
      (await api.post(`/api/v1/endpoints/${endpoint}/filter-test`, { payload: { s: 'xad' } })).body.matches,
      false,
    );
    assert.equal(
      (await api.post(`/api/v1/endpoints/${endpoint}/filter-test`, { payload: { s: `a${'b'.repeat(22)}c` } })).body
        .matches,
      true,
    );
  });

  test('$all over a 60,000-element array: a long list is refused, the longest allowed is bounded', async () => {
    const app = (await createApp(api)).id;
    const values = (n: number) => Array.from({ length: n }, (_, i) => i);
    assertError(
      await api.post('/api/v1/endpoints', {
        app_id: app,
        url: 'http://127.0.0.1:9/f',
        filter: { 'data.a': { $all: values(600) } },
      }),
      400,
      'invalid_request',
      new RegExp(`\\$all lists 600 values; at most ${MAX_FILTER_LIST}`),
    );
    const endpoint = await filtered(app, { 'data.a': { $all: values(MAX_FILTER_LIST) } });
    const a = Array.from({ length: 60_000 }, (_, i) => 1_000 + (i % 1_000));
    await staysResponsive('$all over a long array', async () => {
      assertError(
        await api.post(`/api/v1/endpoints/${endpoint}/filter-test`, { payload: { a } }),
        400,
        'invalid_request',
        /HERALD_FILTER_BUDGET/,
      );
      assert.equal((await emitted(app, { a })).length, 1);
    });
    assert.equal(
      (await api.post(`/api/v1/endpoints/${endpoint}/filter-test`, { payload: { a: values(300) } })).body.matches,
      true,
    );
    assert.equal(
      (await api.post(`/api/v1/endpoints/${endpoint}/filter-test`, { payload: { a: [1, 2] } })).body.matches,
      false,
    );
  });

  test('a thousand ordinary filters and a message with 2,000 tags: the emit is bounded and drops nothing', async () => {
    const app = (await createApp(api)).id;
    const ENDPOINTS = 1_000;
    const ids: string[] = [];
    for (let e = 0; e < ENDPOINTS; e++)
      ids.push(
        await filtered(app, {
          'data.amount': { $gt: e },
          'data.tags': { $in: Array.from({ length: 50 }, (_, i) => `e${e}-${i}`) },
        }),
      );
    // Within the budget every filter decides: one endpoint lists this tag.
    assert.equal((await emitted(app, { amount: 5_000, tags: ['e7-3'] })).length, 1);
    const tags = Array.from({ length: 2_000 }, (_, i) => `t${i}`);
    await staysResponsive('a thousand filters over 2,000 tags', async () => {
      const before = await unapplied();
      const delivered = await emitted(app, { amount: 5_000, tags });
      const skipped = (await unapplied()) - before;
      // Each filter the budget paid for refused the message (no tag matches); the others were not applied,
      // and their endpoints received it.
      assert.ok(skipped > 0 && skipped < ENDPOINTS, `${skipped} filters not applied`);
      assert.equal(delivered.length, skipped);
    });
  });
});
