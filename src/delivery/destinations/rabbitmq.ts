import { randomUUID } from 'node:crypto';
import { connect, type ConfirmChannel, type ChannelModel } from 'amqplib';
import { renderTemplate } from '../../domain/destinations.js';
import type { Connect, Connection, Publication } from './types.js';

// RabbitMQ through amqplib: one connection and one confirm channel per destination. A message is
// persistent, mandatory (an unroutable one comes back, and fails), carries the webhook-id as `message_id`
// (consumers dedupe a repeat by it), the event type as `type`, and the signature headers as AMQP headers.
// The broker's confirm (ack) is the attempt's success; a nack, a return or a closed channel is a failure.

export const connectRabbitmq: Connect = async (destination, { guard }, timeoutMs) => {
  const url = new URL(destination.url);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const address = await guard(host);
  url.hostname = address.includes(':') ? `[${address}]` : address;
  const model: ChannelModel = await connect(url.toString(), {
    timeout: timeoutMs,
    ...(url.protocol === 'amqps:' ? { servername: host } : {}),
  });
  let broken = false;
  const returned = new Set<string>();
  const fail = () => {
    broken = true;
  };
  model.on('error', fail);
  model.on('close', fail);
  let channel: ConfirmChannel;
  try {
    channel = await model.createConfirmChannel();
  } catch (error) {
    await model.close().catch(() => {});
    throw error;
  }
  channel.on('error', fail);
  channel.on('close', fail);
  // A mandatory message no queue took comes back before its confirm: its confirm then reads it as failed.
  channel.on('return', (message) => {
    const id = message.properties.correlationId as string | undefined;
    if (id) returned.add(id);
  });
  const connection: Connection = {
    get broken() {
      return broken;
    },
    publish(message: Publication, settings) {
      const exchange = String(settings.exchange ?? '');
      const key = renderTemplate(String(settings.routing_key ?? '{event_type}'), message.values);
      const tag = randomUUID();
      return new Promise<string>((resolve, reject) => {
        channel.publish(
          exchange,
          key,
          Buffer.from(message.body),
          {
            persistent: true,
            mandatory: true,
            messageId: message.id,
            correlationId: tag,
            type: message.eventType,
            contentType: 'application/json',
            timestamp: Math.floor(Date.now() / 1000),
            headers: message.headers,
          },
          (error: unknown) => {
            const wasReturned = returned.delete(tag);
            if (error) reject(new Error(`the broker refused the message (nack)${describeAmqp(error)}`));
            else if (wasReturned)
              reject(new Error(`unroutable: no queue is bound to exchange "${exchange}" for routing key "${key}"`));
            else resolve(`rabbitmq: confirmed (exchange "${exchange}", routing key "${key}")`);
          },
        );
      });
    },
    async close() {
      broken = true;
      await model.close().catch(() => {});
    },
  };
  return connection;
};

function describeAmqp(error: unknown): string {
  const text = (error as Error)?.message;
  return text && text !== 'message nacked' ? `: ${text}` : '';
}
