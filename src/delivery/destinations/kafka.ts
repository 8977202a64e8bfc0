import { connect as netConnect, isIP, Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { Kafka, logLevel, type ISocketFactory, type Producer, type SASLOptions } from 'kafkajs';
import { kafkaBrokers, renderedProblem, renderTemplate } from '../../domain/destinations.js';
import { refusedAddress } from '../../domain/addresses.js';
import { BlockedAddressError, guardedLookup } from '../sender.js';
import type { Connect, Connection, Network, Publication } from './types.js';

// Kafka through kafkajs: a producer per destination that waits for every in-sync replica (acks = -1) and,
// unless HERALD_KAFKA_IDEMPOTENT=false, is idempotent (the broker drops a retried batch it already wrote).
// A record's key is the key template's value, its headers the signature headers; the partition and offset
// the broker assigned are the answer. Every connection, to the listed brokers and to those the cluster's
// metadata names, goes through the endpoint's address rules (a socket factory with a checked lookup).

/** Kafka producers of a process: idempotent unless HERALD_KAFKA_IDEMPOTENT=false. */
export function kafkaConnector(idempotent: boolean): Connect {
  return (destination, network, timeoutMs) => connectKafka(destination, network, timeoutMs, idempotent);
}

async function connectKafka(
  destination: Parameters<Connect>[0],
  network: Network,
  timeoutMs: number,
  idempotent: boolean,
): Promise<Connection> {
  const brokers = kafkaBrokers(destination.url);
  if (typeof brokers === 'string') throw new Error(`url ${brokers}`);
  const sasl = destination.settings.sasl as { mechanism: string; username: string } | null;
  const kafka = new Kafka({
    clientId: 'herald',
    brokers: brokers.map((b) => `${b.host.includes(':') ? `[${b.host}]` : b.host}:${b.port}`),
    ssl: destination.settings.tls === true,
    ...(sasl
      ? {
          sasl: {
            mechanism: sasl.mechanism,
            username: sasl.username,
            password: destination.secrets.sasl_password ?? '',
          } as SASLOptions,
        }
      : {}),
    connectionTimeout: timeoutMs,
    requestTimeout: timeoutMs,
    retry: { retries: 2, initialRetryTime: 100 },
    logLevel: logLevel.NOTHING,
    socketFactory: guardedSockets(network.publicOnly, network.allow),
  });
  const producer: Producer = kafka.producer({
    idempotent,
    ...(idempotent ? { maxInFlightRequests: 1 } : {}),
    allowAutoTopicCreation: false,
  });
  let broken = false;
  producer.on(producer.events.DISCONNECT, () => {
    broken = true;
  });
  await producer.connect();
  return {
    get broken() {
      return broken;
    },
    async publish(message: Publication, settings) {
      const topic = renderTemplate(String(settings.topic), message.values);
      const problem = renderedProblem('kafka', 'topic', topic);
      if (problem) throw new Error(problem);
      const key = renderTemplate(String(settings.key ?? '{app_id}'), message.values);
      try {
        const [written] = await producer.send({
          topic,
          acks: -1,
          timeout: timeoutMs,
          messages: [{ key, value: message.body, headers: { ...message.headers, 'content-type': 'application/json' } }],
        });
        return `kafka: partition ${written?.partition} offset ${written?.baseOffset}`;
      } catch (error) {
        throw new Error(kafkaProblem(error, topic));
      }
    },
    async close() {
      broken = true;
      await producer.disconnect().catch(() => {});
    },
  };
}

/** A kafkajs error in words: the broker's error type where it gave one (`not enough replicas`). */
function kafkaProblem(error: unknown, topic: string): string {
  const e = error as { type?: string; message?: string; cause?: unknown; name?: string };
  const type = e.type ?? (e.cause as { type?: string } | undefined)?.type;
  if (type === 'UNKNOWN_TOPIC_OR_PARTITION') return `topic "${topic}" does not exist`;
  if (type) return type.toLowerCase().replaceAll('_', ' ');
  const cause = (e.cause as { message?: string } | undefined)?.message;
  return e.message ?? cause ?? 'publish failed';
}

/**
 * kafkajs's sockets, each host judged by the endpoint's address rules: an IP literal before connecting, a
 * name through a lookup that keeps only the addresses it may reach (guardedLookup).
 */
function guardedSockets(publicOnly: boolean, allow: string[]): ISocketFactory {
  const lookup = guardedLookup(publicOnly, allow);
  return ({ host, port, ssl, onConnect }) => {
    const literal = isIP(host) ? refusedAddress(host, host, publicOnly, allow) : null;
    if (literal) {
      // Never connected: the error reaches kafkajs as the connection's.
      const refused = new Socket();
      process.nextTick(() => refused.destroy(new BlockedAddressError(`refused to connect to ${literal}`)));
      return refused;
    }
    return ssl
      ? tlsConnect({ host, port, servername: isIP(host) ? undefined : host, lookup, ...(ssl as object) }, onConnect)
      : netConnect({ host, port, lookup }, onConnect);
  };
}
