import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setup, startReceiver } from '../../support/delivery.js';
import { eventually, type Received } from '../../support/receiver.js';

// An endpoint's circuit breaker (decisions, "Delivery policy"): a window with enough failed attempts opens
// it; nothing is sent while it is open and the due deliveries wait without using attempts; after the
// cooldown one probe goes: a failure opens it again for twice as long, a success closes it and what waited
// is delivered. Each change raises its operational event once.

const SETTINGS = {
  HERALD_CIRCUIT_MIN_ATTEMPTS: '4',
  HERALD_CIRCUIT_FAILURE_RATIO: '0.5',
  HERALD_CIRCUIT_WINDOW: '10s',
  HERALD_CIRCUIT_COOLDOWN: '800ms',
  HERALD_CIRCUIT_MAX_COOLDOWN: '1600ms',
  HERALD_RETRY_SCHEDULE: '0s,100ms,100ms,100ms,100ms,100ms,100ms,100ms,100ms,100ms',
};

const typeOf = (r: Received) => (JSON.parse(r.body) as { type: string }).type;

test('a failing endpoint opens its circuit; a failed probe reopens it for twice the cooldown; a good one closes it', async (t) => {
  const s = await setup(t, SETTINGS);
  let down = true;
  const receiver = await startReceiver(t, () => ({ status: down ? 500 : 200 }));
  const ops = await startReceiver(t);
  const op = await s.api.post('/api/v1/operational-endpoints', {
    url: `${ops.url}/ops`,
    event_types: ['endpoint.circuit_opened', 'endpoint.circuit_closed'],
  });
  assert.equal(op.status, 201, JSON.stringify(op.body));
  const endpoint = await s.endpoint(`${receiver.url}/flaky`);
  const read = async () => (await s.api.get(`/api/v1/endpoints/${endpoint.id}`)).body;
  assert.deepEqual([(await read()).circuit_state, (await read()).circuit_open_until], ['closed', null]);

  const ids: string[] = [];
  for (let i = 0; i < 6; i++) ids.push(...(await s.emit({ i })).deliveryIds);
  const opened = await eventually(
    async () => {
      const now = await read();
      return now.circuit_state === 'open' ? now : null;
    },
    15_000,
    'the circuit to open',
  );
  const openUntil = Date.parse(opened.circuit_open_until);
  const seenOpen = Date.now();
  for (const id of ids) {
    const d = await s.delivery(id);
    assert.equal(d.status, 'pending', 'waiting, not failed');
    assert.ok(d.attempt_count <= 4, `no attempt used while open: ${d.attempt_count}`);
  }

  // The cooldown ends: one probe, still failing, opens it again for twice as long.
  const reopened = await eventually(
    async () => {
      const now = await read();
      return now.circuit_state === 'open' && Date.parse(now.circuit_open_until) > openUntil ? now : null;
    },
    10_000,
    'the failed probe to reopen it',
  );
  // Requests already under way when it opened may still have ended after it; none started while it was
  // open, and one went when the cooldown ended.
  const during = receiver.received.filter((r) => r.at > seenOpen + 150 && r.at < openUntil);
  assert.deepEqual(during, [], 'nothing sent while open');
  const reopenUntil = Date.parse(reopened.circuit_open_until);
  const probes = receiver.received.filter((r) => r.at >= openUntil && r.at < reopenUntil);
  assert.equal(probes.length, 1, 'one probe');
  const second = reopenUntil - probes[0]!.at;
  assert.ok(second >= 1500 && second <= 2600, `twice the cooldown after the probe: ${second} ms`);

  // The receiver comes back: the next probe closes the circuit, and every waiting delivery goes.
  down = false;
  for (const id of ids) await s.until(id, (d) => d.status === 'success', 'delivered once closed', 15_000);
  assert.equal((await read()).circuit_state, 'closed');
  await eventually(async () => ops.received.length >= 3, 10_000, 'three operational events');
  await new Promise((resolve) => setTimeout(resolve, 300));
  const events = ops.received.map((r) => JSON.parse(r.body) as { type: string; data: Record<string, unknown> });
  assert.deepEqual(
    events.map((e) => e.type),
    ['endpoint.circuit_opened', 'endpoint.circuit_opened', 'endpoint.circuit_closed'],
    'one event per change',
  );
  assert.equal(events[0]!.data.endpoint_id, endpoint.id);
  assert.equal(events[0]!.data.app_id, s.appId);
  assert.ok((events[0]!.data.failure_ratio as number) >= 0.5);
  assert.equal(events[0]!.data.open_until, opened.circuit_open_until);
  assert.equal(events[2]!.data.open_until, null);
  assert.ok(ops.received.every((r) => typeOf(r).startsWith('endpoint.circuit_')));
  const metrics = await (await fetch(`${s.service.url}/metrics`)).text();
  assert.match(metrics, /herald_circuit_openings_total 2/);
});

test("an endpoint's circuit settings: its own override the service's, {enabled: false} never opens, bad ones are refused", async (t) => {
  const s = await setup(t, SETTINGS);
  const receiver = await startReceiver(t, () => ({ status: 503 }));
  const off = await s.endpoint(`${receiver.url}/off`, { circuit: { enabled: false } });
  const own = await s.api.get(`/api/v1/endpoints/${off.id}`);
  assert.deepEqual(own.body.circuit, { enabled: false });
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push(...(await s.emit({ i })).deliveryIds);
  for (const id of ids) await s.until(id, (d) => d.attempt_count >= 3, 'three attempts each', 15_000);
  assert.equal((await s.api.get(`/api/v1/endpoints/${off.id}`)).body.circuit_state, 'closed', 'off: never opens');

  const bad: [unknown, RegExp][] = [
    [{ failure_ratio: 1.5 }, /circuit\.failure_ratio/],
    [{ failure_ratio: 0 }, /circuit\.failure_ratio/],
    [{ min_attempts: 0 }, /circuit\.min_attempts/],
    [{ window: '1ms' }, /circuit\.window/],
    [{ cooldown: '1h' }, /circuit\.cooldown.*HERALD_CIRCUIT_MAX_COOLDOWN/],
    [{ cooldown: 'soon' }, /circuit\.cooldown/],
  ];
  for (const [circuit, message] of bad) {
    const refused = await s.api.patch(`/api/v1/endpoints/${off.id}`, { circuit });
    assert.equal(refused.status, 400, JSON.stringify(circuit));
    assert.match(refused.body.error.message, message);
  }
  assert.deepEqual((await s.api.get(`/api/v1/endpoints/${off.id}`)).body.circuit, { enabled: false }, 'unchanged');
  const tuned = await s.api.patch(`/api/v1/endpoints/${off.id}`, { circuit: { min_attempts: 50, cooldown: '1s' } });
  assert.equal(tuned.status, 200, JSON.stringify(tuned.body));
  assert.deepEqual(tuned.body.circuit, { min_attempts: 50, cooldown: '1s' });
  const back = await s.api.patch(`/api/v1/endpoints/${off.id}`, { circuit: null });
  assert.equal(back.body.circuit, null);
});
