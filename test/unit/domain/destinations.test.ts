import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  checkedDestination,
  type DestinationType,
  destinationHosts,
  renderTemplate,
  shownConfig,
  shownUrl,
  templateProblem,
  urlWithPassword,
} from '../../../src/domain/destinations.js';

// The rules a destination is checked by when it is written: each type's URL schemes and config fields,
// templates, the topics a broker would refuse, and secrets kept apart (and kept when written back redacted).

function refused(type: DestinationType, url: string, config?: Record<string, unknown>): string {
  const checked = checkedDestination(type, url, config, null);
  assert.equal(typeof checked, 'string', `expected a refusal of ${type} ${url} ${JSON.stringify(config)}`);
  return checked as string;
}

function accepted(type: DestinationType, url: string, config?: Record<string, unknown>) {
  const checked = checkedDestination(type, url, config, null);
  if (typeof checked === 'string') assert.fail(checked);
  return checked;
}

test('each type takes its own schemes and fills in the defaults decisions names', () => {
  assert.deepEqual(accepted('rabbitmq', 'amqp://h:5672/vh').settings, { exchange: '', routing_key: '{event_type}' });
  assert.deepEqual(accepted('nats', 'nats://h:4222').settings, { subject: 'webhooks.{event_type}', jetstream: true });
  assert.deepEqual(accepted('redis', 'rediss://h:6380/2').settings, { stream: 'webhooks', maxlen: null });
  assert.deepEqual(accepted('mqtt', 'mqtts://h').settings, { topic: 'webhooks/{event_type}', qos: 1 });
  assert.deepEqual(accepted('kafka', 'kafka://a:9092,b:9093', { topic: 't' }).settings, {
    topic: 't',
    key: '{app_id}',
    sasl: null,
    tls: false,
  });
  const aws = { region: 'eu-west-1', access_key_id: 'AKIA', secret_access_key: 's3cr3t' };
  assert.deepEqual(accepted('s3', 's3://my-bucket', aws).settings, {
    region: 'eu-west-1',
    access_key_id: 'AKIA',
    endpoint_url: null,
    key: '{app_id}/{event_type}/{message_id}.json',
  });
  assert.equal(accepted('sqs', 'https://sqs.eu-west-1.amazonaws.com/1/q', aws).secrets.secret_access_key, 's3cr3t');

  assert.match(refused('rabbitmq', 'https://h'), /^url must use amqp or amqps for a rabbitmq endpoint/);
  assert.match(refused('nats', 'amqp://h'), /^url must use nats or tls/);
  assert.match(refused('kafka', 'kafka://h'), /^url must be kafka:\/\/host:port/);
  assert.match(refused('s3', 's3://b/path', aws), /^url must be s3:\/\/bucket/);
  assert.match(refused('kafka', 'kafka://h:1'), /^config.topic is required/);
  assert.match(refused('sqs', 'https://q', { region: 'r' }), /^config.access_key_id is required/);
  assert.match(refused('rabbitmq', 'amqp://h', { exchnage: 'x' }), /^config.exchnage is not a field of a rabbitmq/);
  assert.match(refused('mqtt', 'mqtt://h', { qos: 3 }), /^config.qos must be an integer from 0 to 2/);
  assert.match(refused('nats', 'nats://h', { jetstream: 'yes' }), /^config.jetstream must be true or false/);
  assert.match(refused('kafka', 'kafka://h:1', { topic: 't', sasl: { mechanism: 'md5' } }), /^config.sasl.mechanism/);
});

test('templates take the five placeholders only; topics a broker would refuse are refused', () => {
  assert.equal(templateProblem('{event_type}.{app_id}.{app_uid}.{endpoint_id}.{message_id}'), null);
  assert.match(refused('rabbitmq', 'amqp://h', { routing_key: '{event}' }), /unknown placeholder \{event\}/);
  assert.match(refused('redis', 'redis://h', { stream: 'a{b' }), /unmatched brace/);
  assert.match(refused('mqtt', 'mqtt://h', { topic: 'a/+/b' }), /wildcards \+ or #/);
  assert.match(refused('mqtt', 'mqtt://h', { topic: 'a/#' }), /wildcards/);
  assert.match(refused('nats', 'nats://h', { subject: 'a.*' }), /wildcards \* and >/);
  assert.match(refused('nats', 'nats://h', { subject: 'a..{event_type}' }), /empty token/);
  assert.match(refused('kafka', 'kafka://h:1', { topic: 'orders/{event_type}' }), /Kafka topic names/);
  assert.match(
    refused('s3', 's3://bkt', { region: 'r', access_key_id: 'a', secret_access_key: 's', key: 'k'.repeat(600) }),
    /1024 bytes/,
  );
  assert.equal(
    renderTemplate('{app_id}/{event_type}/{message_id}.json', {
      app_id: 'app_1',
      app_uid: '',
      endpoint_id: 'ep_1',
      event_type: 'invoice.paid',
      message_id: 'msg_1',
    }),
    'app_1/invoice.paid/msg_1.json',
  );
});

test('a URL password and secret fields are kept apart, shown redacted, and kept when written back redacted', () => {
  const first = accepted('nats', 'nats://user:p%40ss@h:4222', { token: 'tok' });
  assert.equal(first.url, 'nats://user@h:4222');
  assert.deepEqual(first.secrets, { password: 'p@ss', token: 'tok' });
  const names = Object.keys(first.secrets);
  const shown = shownUrl(first.url, names.includes('password'));
  assert.equal(shown, 'nats://user:<redacted>@h:4222');
  const config = shownConfig('nats', first.settings, names);
  assert.deepEqual(config, { subject: 'webhooks.{event_type}', jetstream: true, token: '<redacted>' });
  const again = checkedDestination('nats', shown, config, {
    url: first.url,
    settings: first.settings,
    secrets: first.secrets,
  });
  assert.notEqual(typeof again, 'string');
  assert.deepEqual((again as typeof first).secrets, first.secrets);
  assert.equal(urlWithPassword(first.url, first.secrets.password), 'nats://user:p%40ss@h:4222');
  // A redacted value with nothing stored behind it is refused.
  assert.match(refused('nats', 'nats://user:<redacted>@h'), /"<redacted>" password but none is stored/);
  // A password with no user name reads back in place too.
  const bare = accepted('redis', 'redis://:pw@h:6379/0');
  assert.equal(shownUrl(bare.url, true), 'redis://:<redacted>@h:6379/0');
  const sasl = accepted('kafka', 'kafka://h:1', {
    topic: 't',
    sasl: { mechanism: 'plain', username: 'u', password: 'p' },
  });
  assert.deepEqual(shownConfig('kafka', sasl.settings, Object.keys(sasl.secrets)).sasl, {
    mechanism: 'plain',
    username: 'u',
    password: '<redacted>',
  });
  assert.match(refused('kafka', 'kafka://u:p@h:1', { topic: 't' }), /must not hold a password/);
});

test('the hosts a destination connects to are what the address rules judge', () => {
  assert.deepEqual(destinationHosts('kafka', 'kafka://a:1,[::1]:2', {}), [
    { host: 'a', field: 'url' },
    { host: '::1', field: 'url' },
  ]);
  assert.deepEqual(destinationHosts('s3', 's3://b', { endpoint_url: 'http://10.0.0.1:9000' }), [
    { host: '10.0.0.1', field: 'config.endpoint_url' },
  ]);
  assert.deepEqual(destinationHosts('rabbitmq', 'amqp://u@rabbit.example:5672', {}), [
    { host: 'rabbit.example', field: 'url' },
  ]);
});

test('whatever text a template holds, rendering leaves no known placeholder and checking never throws', () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 60 }), fc.constantFrom('rabbitmq', 'nats', 'redis', 'mqtt'), (text, type) => {
      const checked = checkedDestination(
        type as DestinationType,
        `${type === 'rabbitmq' ? 'amqp' : type}://h`,
        {
          [{ rabbitmq: 'routing_key', nats: 'subject', redis: 'stream', mqtt: 'topic' }[type]!]: text,
        },
        null,
      );
      if (typeof checked === 'string') return;
      const rendered = Object.values(checked.settings)
        .filter((v): v is string => typeof v === 'string')
        .map((v) =>
          renderTemplate(v, { app_id: 'a', app_uid: 'u', endpoint_id: 'e', event_type: 't', message_id: 'm' }),
        );
      for (const r of rendered) assert.ok(!/\{(event_type|app_id|app_uid|endpoint_id|message_id)\}/.test(r));
    }),
    { numRuns: 500 },
  );
});
