import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { signPayload } from '../../../src/domain/secrets.js';
import {
  JITTER,
  MAX_RETRY_AFTER_MS,
  nextDelayAfterFailure,
  parseRetryAfter,
  scheduledDelay,
} from '../../../src/domain/retry.js';
import { nextEndpointHealth, type EndpointHealth } from '../../../src/domain/endpoint-state.js';
import { outboundBody } from '../../../src/domain/envelope.js';
import { allowListed, isPublicAddress, refusedAddress } from '../../../src/domain/addresses.js';
import { endpointUrlProblem } from '../../../src/domain/urls.js';
import { signedRequest } from '../../../src/delivery/request.js';

// The pure rules under the delivery engine: signing, retry timing, endpoint health, address checks.

test('signPayload matches the Standard Webhooks known-answer vector', () => {
  const signature = signPayload(
    'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    'msg_p5jXN8AQM9LWM0D4loKWxJek',
    1614265330,
    '{"test": 2432232314}',
  );
  assert.equal(signature, 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
});

test('signedRequest: one signature per valid secret, each verifiable alone, body is the envelope', () => {
  const current = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const previous = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;
  const now = Date.now();
  const request = signedRequest(
    {
      delivery: {
        id: 'dlv_1',
        messageId: 'evt_1',
        eventType: 'invoice.paid',
        createdAt: Date.UTC(2024, 0, 2),
        livemode: false,
        traceparent: null,
        tracestate: null,
      },
    },
    { url: 'http://127.0.0.1:1/', publicOnly: false, secrets: { current, previous: [previous] }, headers: {} },
    '{"amount":1}',
    now,
    { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', tracestate: 'vendor=1' },
  );
  assert.equal(request.headers.traceparent, '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
  assert.equal(request.headers.tracestate, 'vendor=1');
  assert.equal(request.body, '{"type":"invoice.paid","timestamp":"2024-01-02T00:00:00.000Z","data":{"amount":1}}');
  assert.equal(request.body, outboundBody('invoice.paid', Date.UTC(2024, 0, 2), '{"amount":1}'));
  const signatures = request.headers['webhook-signature']!.split(' ');
  assert.equal(signatures.length, 2);
  for (const [secret, signature] of [
    [current, signatures[0]!],
    [previous, signatures[1]!],
  ] as const) {
    const headers = { ...request.headers, 'webhook-signature': signature };
    assert.deepEqual(new StandardWebhook(secret).verify(request.body, headers), JSON.parse(request.body));
  }
  assert.equal(request.headers['webhook-timestamp'], String(Math.floor(now / 1000)));
});

test('scheduledDelay stays within ±20% of the schedule and ends with the schedule', () => {
  const schedule = [0, 1000, 60_000];
  assert.equal(scheduledDelay(schedule, 0), 0);
  assert.equal(scheduledDelay(schedule, 3), null);
  assert.equal(
    scheduledDelay(schedule, 1, () => 0),
    1000 * (1 - JITTER),
  );
  assert.equal(
    scheduledDelay(schedule, 1, () => 0.999999),
    Math.round(1000 * (1 + JITTER * 0.999998)),
  );
  let low = Infinity;
  let high = -Infinity;
  for (let i = 0; i < 5000; i++) {
    const delay = scheduledDelay(schedule, 2)!;
    low = Math.min(low, delay);
    high = Math.max(high, delay);
  }
  assert.ok(low >= 48_000 && high <= 72_000, `delays ${low}..${high} outside ±20% of 60s`);
  // Jitter is real: the spread covers most of the band.
  assert.ok(low < 50_000 && high > 70_000, `delays ${low}..${high} barely jittered`);
});

test('Retry-After: seconds or HTTP date, bounded, and only ever lengthens the wait', () => {
  const now = Date.UTC(2024, 0, 1);
  assert.equal(parseRetryAfter('3', now), 3000);
  assert.equal(parseRetryAfter(new Date(now + 5000).toUTCString(), now), 5000);
  assert.equal(parseRetryAfter('soon', now), null);
  assert.equal(parseRetryAfter(undefined, now), null);
  assert.equal(parseRetryAfter('99999999', now), MAX_RETRY_AFTER_MS);
  assert.equal(
    nextDelayAfterFailure([0, 50], 1, 1000, () => 0.5),
    1000,
  );
  assert.equal(
    nextDelayAfterFailure([0, 5000], 1, 1000, () => 0.5),
    5000,
  );
  assert.equal(nextDelayAfterFailure([0, 50], 2, 1000), null, 'Retry-After never adds an attempt past the schedule');
});

test('endpoint health: failing, active again, 410 disables, a failure after the window with an exhausted delivery disables, operator disable sticks', () => {
  const window = 1000;
  const active = { status: 'active' as const, failingSince: null, exhaustedAt: null };
  const fail = (health: EndpointHealth, at: number, exhausted = false, responseStatus: number | null = 500) =>
    nextEndpointHealth(health, { ok: false, responseStatus, exhausted, at }, window);
  const failed = fail(active, 100);
  assert.deepEqual(failed, { status: 'failing', failingSince: 100, exhaustedAt: null });
  assert.deepEqual(
    nextEndpointHealth(failed, { ok: true, responseStatus: 200, exhausted: false, at: 200 }, window),
    active,
  );
  assert.equal(fail(active, 100, false, 410).status, 'disabled');
  // Exhausted but not failing for long enough: still failing, and the exhaustion is remembered.
  const exhaustedEarly = fail(failed, 500, true);
  assert.deepEqual(exhaustedEarly, { status: 'failing', failingSince: 100, exhaustedAt: 500 });
  // Long enough but nothing exhausted in this run of failures: still failing.
  assert.equal(fail(failed, 5000).status, 'failing');
  // The exhausting failure passes the window; or any failure after it, once a delivery exhausted earlier.
  assert.equal(fail(failed, 1100, true, null).status, 'disabled');
  assert.equal(fail(exhaustedEarly, 1100).status, 'disabled');
  assert.equal(fail(fail(exhaustedEarly, 600), 1099).status, 'failing', 'not before the window ends');
  // A success ends the run: an exhaustion before it no longer counts.
  const recovered = nextEndpointHealth(
    exhaustedEarly,
    { ok: true, responseStatus: 200, exhausted: false, at: 700 },
    window,
  );
  assert.deepEqual(recovered, active);
  assert.equal(fail(fail(recovered, 800), 5000).status, 'failing');
  // One left from before the run began (written by a process that did not clear it) does not count either.
  assert.equal(fail({ status: 'failing', failingSince: 100, exhaustedAt: 50 }, 5000).status, 'failing');
  const off = { status: 'disabled' as const, failingSince: null, exhaustedAt: null };
  assert.deepEqual(nextEndpointHealth(off, { ok: true, responseStatus: 200, exhausted: false, at: 1 }, window), off);
});

test('addresses: only globally routable unicast is public', () => {
  const blocked = [
    '127.0.0.1',
    '127.1.2.3',
    '10.0.0.1',
    '10.255.255.255',
    '172.16.0.1',
    '172.31.255.254',
    '192.168.0.1',
    '169.254.169.254',
    '100.64.0.1',
    '100.127.255.254',
    '224.0.0.1',
    '239.255.255.250',
    '0.0.0.0',
    '255.255.255.255',
    '240.0.0.1',
    '198.18.0.1',
    '192.0.2.1',
    '::',
    '::1',
    'fe80::1',
    'fe80::1%eth0',
    'fc00::1',
    'fd12:3456::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '::ffff:7f00:1',
    '::7f00:1',
    '::a00:1',
    '64:ff9b::7f00:1',
    '2002:7f00:1::',
    '2001:db8::1',
    '[::1]',
    'localhost',
    '',
    'not-an-ip',
  ];
  for (const address of blocked) assert.equal(isPublicAddress(address), false, `${address} must not be public`);
  for (const address of [
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700::1111',
    '::ffff:8.8.8.8',
  ]) {
    assert.equal(isPublicAddress(address), true, `${address} is public`);
  }
  assert.equal(allowListed('127.0.0.1', ['127.0.0.1']), true);
  assert.equal(allowListed('::ffff:127.0.0.1', ['127.0.0.0/8']), true);
  assert.equal(allowListed('10.0.0.1', ['127.0.0.0/8', '192.168.0.0/16']), false);
  assert.equal(allowListed('::1', ['127.0.0.1']), false);
  assert.equal(allowListed('10.0.0.1', ['garbage/99']), false);
});

test('endpoint URLs: Live refuses private hosts in every spelling; Test allows localhost', () => {
  const refused = [
    'https://127.0.0.1/',
    'https://localhost/',
    'https://localhost./',
    'https://LOCALHOST/',
    'https://api.localhost/',
    'https://[::1]/',
    'https://[::ffff:127.0.0.1]/',
    'https://2130706433/',
    'https://0x7f000001/',
    'https://0177.0.0.1/',
    'https://127.1/',
    'https://0/',
    'https://[::]/',
    'https://10.1.2.3/',
    'https://172.16.5.4/',
    'https://192.168.1.1/',
    'https://169.254.169.254/latest/meta-data',
    'https://100.64.1.1/',
    'https://224.0.0.1/',
    'https://0.0.0.0/',
    'https://[fe80::1]/',
    'https://[fc00::1]/',
    'http://example.com/',
    'ftp://example.com/',
    'not a url',
  ];
  for (const url of refused) assert.notEqual(endpointUrlProblem(url, true, []), null, `${url} must be refused in Live`);
  assert.equal(endpointUrlProblem('https://example.com/hooks', true, []), null);
  assert.equal(endpointUrlProblem('https://8.8.8.8/hooks', true, []), null);
  assert.equal(endpointUrlProblem('https://127.0.0.1/', true, ['127.0.0.1']), null, 'operator allow-list');
  assert.equal(endpointUrlProblem('https://10.1.2.3/', true, ['10.0.0.0/8']), null, 'operator allow-list range');
  for (const url of [
    'http://localhost:3000/hook',
    'http://127.0.0.1:9/',
    'https://[::1]/',
    'http://10.1.2.3/',
    'http://192.168.1.1:8080/',
  ]) {
    assert.equal(endpointUrlProblem(url, false, []), null, `${url} is allowed in Test`);
  }
  // Not link-local ones, where cloud metadata services answer, in any spelling.
  for (const url of [
    'http://169.254.169.254/latest/meta-data',
    'http://0xA9FEA9FE/',
    'http://2852039166/',
    'http://[fe80::1]/',
    'http://[::ffff:169.254.169.254]/',
    'http://[fd00:ec2::254]/',
    'http://100.100.100.200/latest/meta-data/',
    'http://192.0.0.192/',
    'http://[::a9fe:a9fe]/',
    'http://[2002:a9fe:a9fe::1]/',
    'http://[::ffff:0:a9fe:a9fe]/',
    'http://[2001:0:a9fe:a9fe::1]/',
  ]) {
    assert.match(endpointUrlProblem(url, false, []) ?? '', /link-local/, `${url} must be refused in Test`);
  }
  assert.equal(endpointUrlProblem('http://169.254.10.10/', false, ['169.254.0.0/16']), null, 'operator allow-list');
});

test('connections: Live reaches public addresses only, Test anything but link-local and metadata ones', () => {
  for (const address of [
    '127.0.0.1',
    '::1',
    '10.0.0.1',
    '192.168.1.1',
    'fd12::1',
    '8.8.8.8',
    '64:ff9b::808:808',
    '100.100.100.1',
    '192.0.0.1',
    '2002:a00:1::1',
    '::a00:1',
    '::ffff:0:a00:1',
    '2001:0:808:808::f5ff:fffe',
  ])
    assert.equal(refusedAddress(address, 'h', false, []), null, address);
  for (const address of [
    '169.254.169.254',
    '169.254.0.1',
    'fe80::1',
    '::ffff:169.254.169.254',
    'fd00:ec2::254',
    'fd00:ec2::23',
    '64:ff9b::a9fe:a9fe',
    '64:ff9b:1::a9fe:a9fe',
    '100.100.100.200',
    '::ffff:100.100.100.200',
    '192.0.0.192',
    '::a9fe:a9fe',
    '2002:a9fe:a9fe::1',
    '64:ff9b::6464:64c8',
    // SIIT (IPv4-translated) and Teredo (server in bits 32–63, client inverted in the last 32).
    '::ffff:0:a9fe:a9fe',
    '2001:0:a9fe:a9fe::1',
    '2001:0:0808:0808:0:0:5601:5601',
  ])
    assert.match(refusedAddress(address, 'h', false, []) ?? '', /link-local/, address);
  for (const address of ['127.0.0.1', '10.0.0.1', '169.254.169.254'])
    assert.match(refusedAddress(address, 'h', true, []) ?? '', /non-public/, address);
  assert.equal(refusedAddress('8.8.8.8', 'h', true, []), null);
  assert.equal(refusedAddress('169.254.1.1', 'h', false, ['169.254.1.1']), null, 'allow-listed address');
  assert.equal(refusedAddress('10.0.0.1', 'hooks.internal', true, ['hooks.internal']), null, 'allow-listed host name');
  assert.equal(
    refusedAddress('10.0.0.1', 'hooks.internal.', true, ['hooks.internal']),
    null,
    'allow-listed host name spelled with its trailing dot',
  );
});
