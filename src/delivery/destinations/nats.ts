import { connect, headers as natsHeaders, type NatsConnection } from 'nats';
import { renderedProblem, renderTemplate } from '../../domain/destinations.js';
import type { Connect, Connection, Publication } from './types.js';

// NATS through the `nats` client. With JetStream (the default) a message is published to the stream that
// listens on its subject with `Nats-Msg-Id` = webhook-id, so the stream drops a repeat within its
// duplicate window; the PubAck (stream and sequence) is the success. With `jetstream: false` it is a core
// NATS publish: flushed to the server, which acknowledges nothing (docs/destinations.md).

export const connectNats: Connect = async (destination, { guard }, timeoutMs) => {
  const url = new URL(destination.url);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const address = await guard(host);
  const port = url.port || '4222';
  const token = destination.secrets.token;
  const nc: NatsConnection = await connect({
    servers: `${address.includes(':') ? `[${address}]` : address}:${port}`,
    timeout: timeoutMs,
    reconnect: false,
    // The client would make two errors for every publish (where it began, and its own timeout's) to add to
    // a trace if it failed: the attempt's error shows a message only, and its deadline is the publisher's.
    noAsyncTraces: true,
    ...(url.username ? { user: decodeURIComponent(url.username), pass: destination.secrets.password ?? '' } : {}),
    ...(token ? { token } : {}),
    ...(url.protocol === 'tls:' ? { tls: { servername: host } as object } : {}),
  });
  const jetstream = destination.settings.jetstream !== false;
  const js = jetstream ? nc.jetstream({ timeout: timeoutMs }) : null;
  const connection: Connection = {
    get broken() {
      return nc.isClosed();
    },
    async publish(message: Publication, settings) {
      const subject = renderTemplate(String(settings.subject ?? 'webhooks.{event_type}'), message.values);
      const problem = renderedProblem('nats', 'subject', subject);
      if (problem) throw new Error(problem);
      const h = natsHeaders();
      for (const [name, value] of Object.entries(message.headers)) h.set(name, value);
      h.set('Content-Type', 'application/json');
      const data = Buffer.from(message.body);
      if (js) {
        try {
          const ack = await js.publish(subject, data, { msgID: message.id, headers: h, timeout: timeoutMs });
          return `nats: stream ${ack.stream} sequence ${ack.seq}${ack.duplicate ? ' (a repeat the stream dropped)' : ''}`;
        } catch (error) {
          const code = (error as { code?: string }).code;
          if (code === '503') throw new Error(`no stream listens on subject "${subject}" (JetStream: no responders)`);
          throw error;
        }
      }
      nc.publish(subject, data, { headers: h });
      await nc.flush();
      return `nats: published to "${subject}" (core NATS: no acknowledgement)`;
    },
    async close() {
      await nc.close().catch(() => {});
    },
  };
  return connection;
};
