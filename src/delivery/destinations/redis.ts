import { Redis } from 'ioredis';
import { renderTemplate } from '../../domain/destinations.js';
import type { Connect, Connection, Publication } from './types.js';

// Redis Streams through ioredis: XADD of fields `id`, `type`, `body`, then one field per signature header,
// to the stream the template names, trimmed to about `maxlen` entries when set. The entry id is the answer.
// The client neither queues commands while disconnected nor reconnects: a failed attempt drops the
// connection and the next one opens a fresh one.

export const connectRedis: Connect = async (destination, { guard }, timeoutMs) => {
  const url = new URL(destination.url);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const address = await guard(host);
  const db = Number(url.pathname.replace(/^\//, '') || 0);
  const client = new Redis({
    host: address,
    port: Number(url.port || 6379),
    db: Number.isInteger(db) ? db : 0,
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(destination.secrets.password !== undefined ? { password: destination.secrets.password } : {}),
    ...(url.protocol === 'rediss:' ? { tls: { servername: host } } : {}),
    lazyConnect: true,
    connectTimeout: timeoutMs,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  let broken = false;
  /** The client's own error: its connect() rejects with "Connection is closed." whatever the cause. */
  let cause: Error | null = null;
  client.on('error', (error: Error) => {
    broken = true;
    cause = error;
  });
  client.on('end', () => {
    broken = true;
  });
  try {
    await client.connect();
  } catch (error) {
    client.disconnect();
    throw cause ?? error;
  }
  const connection: Connection = {
    get broken() {
      return broken || client.status !== 'ready';
    },
    async publish(message: Publication, settings) {
      const stream = renderTemplate(String(settings.stream ?? 'webhooks'), message.values);
      const maxlen = settings.maxlen;
      const fields = ['id', message.id, 'type', message.eventType, 'body', message.body];
      for (const [name, value] of Object.entries(message.headers)) fields.push(name, value);
      const trim = typeof maxlen === 'number' ? ['MAXLEN', '~', String(maxlen)] : [];
      const entry = await client.call('XADD', stream, ...trim, '*', ...fields);
      return `redis: stream "${stream}" entry ${String(entry)}`;
    },
    async close() {
      broken = true;
      client.disconnect();
    },
  };
  return connection;
};
