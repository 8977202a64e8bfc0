import { test } from 'node:test';
import assert from 'node:assert/strict';
import { endpointOccurrence, eventCauses, outcomeOccurrences, type Subject } from '../../../src/domain/operational.js';
import type { OutcomeEvent, PlannedAttempt } from '../../../src/domain/outcome-plan.js';

// The operational events' bodies, built without I/O from the outcome planner's events.

const AT = Date.UTC(2026, 0, 1);
const subject: Subject = {
  orgId: 'org_1',
  livemode: 0,
  appId: 'app_1',
  appUid: 'acme',
  endpointId: 'ep_1',
  endpointType: 'http',
};

function attempt(n: number, status: number, at: number, delivery = 'dlv_1'): PlannedAttempt & { endpoint_id: string } {
  return {
    id: `att_${n}`,
    delivery_id: delivery,
    endpoint_id: 'ep_1',
    attempt_number: n,
    trigger: 'scheduled',
    status: status < 300 ? 'success' : 'failed',
    response_status: status,
    response_body: null,
    request_headers: null,
    response_headers: null,
    error: status < 300 ? null : `HTTP ${status}`,
    duration_ms: 1,
    created_at: at,
    request: null,
  };
}

test('outcome events take their public names, their delivery and the attempt that raised them', () => {
  const events: OutcomeEvent[] = [
    { type: 'delivery.failing', deliveryId: 'dlv_1', endpointId: 'ep_1', at: AT },
    { type: 'delivery.exhausted', deliveryId: 'dlv_1', endpointId: 'ep_1', at: AT },
    { type: 'delivery.recovered', deliveryId: 'dlv_2', endpointId: 'ep_1', at: AT + 1 },
    { type: 'endpoint.disabled', endpointId: 'ep_1', trigger: 'gone', at: AT + 2 },
  ];
  const attempts = [attempt(3, 500, AT), attempt(4, 200, AT + 1, 'dlv_2'), attempt(1, 410, AT + 2, 'dlv_3')];
  const occurrences = outcomeOccurrences(
    eventCauses(events, attempts),
    new Map([['ep_1', subject]]),
    new Map([
      ['dlv_1', 'evt_1'],
      ['dlv_2', 'evt_2'],
    ]),
  );
  assert.deepEqual(
    occurrences.map((o) => o.type),
    ['message.attempt.failing', 'message.attempt.exhausted', 'message.attempt.recovered', 'endpoint.disabled'],
  );
  assert.deepEqual(occurrences[0], {
    orgId: 'org_1',
    livemode: 0,
    type: 'message.attempt.failing',
    at: AT,
    data: {
      app_id: 'app_1',
      app_uid: 'acme',
      endpoint_id: 'ep_1',
      endpoint_type: 'http',
      message_id: 'evt_1',
      delivery_id: 'dlv_1',
      last_attempt: {
        attempt_number: 3,
        response_status: 500,
        error: 'HTTP 500',
        created_at: '2026-01-01T00:00:00.000Z',
      },
    },
  });
  assert.equal(occurrences[2]!.data.last_attempt!.attempt_number, 4);
  assert.deepEqual(
    [
      occurrences[3]!.data.trigger,
      occurrences[3]!.data.last_attempt!.response_status,
      occurrences[3]!.data.delivery_id,
    ],
    ['gone', 410, undefined],
  );
});

test('an event about an endpoint not among the subjects (operational, or deleted) raises nothing', () => {
  const events: OutcomeEvent[] = [
    { type: 'delivery.failing', deliveryId: 'dlv_1', endpointId: 'ep_ops', at: AT },
    { type: 'endpoint.disabled', endpointId: 'ep_ops', trigger: 'failures', at: AT },
  ];
  assert.deepEqual(
    outcomeOccurrences(eventCauses(events, [attempt(3, 500, AT)]), new Map([['ep_1', subject]]), new Map()),
    [],
  );
});

test("an endpoint's own events carry no delivery; a manual disable says so", () => {
  assert.deepEqual(endpointOccurrence('endpoint.disabled', subject, AT, 'manual').data, {
    app_id: 'app_1',
    app_uid: 'acme',
    endpoint_id: 'ep_1',
    endpoint_type: 'http',
    trigger: 'manual',
  });
  assert.deepEqual(endpointOccurrence('endpoint.created', { ...subject, endpointType: 'kafka' }, AT).data, {
    app_id: 'app_1',
    app_uid: 'acme',
    endpoint_id: 'ep_1',
    endpoint_type: 'kafka',
  });
});
