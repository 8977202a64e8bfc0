import { randomBytes } from 'node:crypto';
import { connectAsync, type MqttClient } from 'mqtt';
import { renderedProblem, renderTemplate } from '../../domain/destinations.js';
import type { Connect, Connection, Publication } from './types.js';

// MQTT 5 through mqtt.js: a publish at the configured QoS (1 by default) with the signature headers as user
// properties and `application/json` as the content type. QoS 1 completes on PUBACK, QoS 2 on PUBCOMP; a
// reason code of failure in either is a failed attempt. QoS 0 has no acknowledgement: the message is
// written to the connection.

export const connectMqtt: Connect = async (destination, { guard }, timeoutMs) => {
  const url = new URL(destination.url);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const address = await guard(host);
  const tls = url.protocol === 'mqtts:';
  const client: MqttClient = await connectAsync({
    protocol: tls ? 'mqtts' : 'mqtt',
    host: address,
    port: Number(url.port || (tls ? 8883 : 1883)),
    protocolVersion: 5,
    clientId: `herald_${randomBytes(8).toString('hex')}`,
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(destination.secrets.password !== undefined ? { password: destination.secrets.password } : {}),
    ...(tls ? { servername: host } : {}),
    connectTimeout: timeoutMs,
    reconnectPeriod: 0,
  });
  let broken = false;
  client.on('error', () => {
    broken = true;
  });
  client.on('close', () => {
    broken = true;
  });
  const connection: Connection = {
    get broken() {
      return broken || !client.connected;
    },
    async publish(message: Publication, settings) {
      const topic = renderTemplate(String(settings.topic ?? 'webhooks/{event_type}'), message.values);
      const qos = (settings.qos ?? 1) as 0 | 1 | 2;
      const problem = renderedProblem('mqtt', 'topic', topic);
      if (problem) throw new Error(problem);
      const packet = await client.publishAsync(topic, message.body, {
        qos,
        properties: { userProperties: message.headers, contentType: 'application/json' },
      });
      const reason = (packet as { reasonCode?: number } | undefined)?.reasonCode;
      if (reason !== undefined && reason >= 0x80)
        throw new Error(`the broker refused the message (reason code ${reason})`);
      return `mqtt: ${qos === 0 ? 'sent at QoS 0 (no acknowledgement)' : qos === 1 ? 'PUBACK' : 'PUBCOMP'} on "${topic}"`;
    },
    async close() {
      broken = true;
      await client.endAsync(true).catch(() => {});
    },
  };
  return connection;
};
