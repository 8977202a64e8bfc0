import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import type { Destination } from '../../domain/destinations.js';
import { guardedLookup } from '../sender.js';
import type { Connection, Network, Publication } from './types.js';
import type { DestinationSettings } from '../../domain/destinations.js';

// What the SQS and S3 clients share: the credentials and region of a destination's config, its
// endpoint_url (an emulator, a VPC endpoint) where set, and HTTP agents whose lookup keeps only the
// addresses the endpoint may reach. Literal addresses were judged when the destination was written.

export function awsClientConfig(destination: Destination, network: Network, timeoutMs: number) {
  const lookup = guardedLookup(network.publicOnly, network.allow);
  const endpoint = destination.settings.endpoint_url;
  return {
    region: String(destination.settings.region),
    credentials: {
      accessKeyId: String(destination.settings.access_key_id),
      secretAccessKey: destination.secrets.secret_access_key ?? '',
    },
    ...(typeof endpoint === 'string' ? { endpoint } : {}),
    maxAttempts: 1,
    requestHandler: new NodeHttpHandler({
      httpAgent: new HttpAgent({ keepAlive: true, maxSockets: 16, lookup }),
      httpsAgent: new HttpsAgent({ keepAlive: true, maxSockets: 16, lookup }),
      connectionTimeout: timeoutMs,
      requestTimeout: timeoutMs,
    }),
  };
}

/** An AWS error in words: its code and message (`QueueDoesNotExist: …`), never a credential. */
export function awsProblem(error: unknown): string {
  const e = error as { name?: string; Code?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const code = e.Code ?? e.name;
  const text = e.message && e.message !== code ? `: ${e.message}` : '';
  const status = e.$metadata?.httpStatusCode ? ` (HTTP ${e.$metadata.httpStatusCode})` : '';
  return `${code ?? 'request failed'}${text}${status}`.slice(0, 500);
}

/**
 * A connection of an AWS client: its publish, with the service's answers in words (awsProblem); closing it
 * destroys the client and its sockets.
 */
export function awsConnection(
  client: { destroy(): void },
  publish: (message: Publication, settings: DestinationSettings) => Promise<string>,
): Connection {
  let broken = false;
  return {
    get broken() {
      return broken;
    },
    async publish(message, settings) {
      try {
        return await publish(message, settings);
      } catch (error) {
        // The service's own answers in words; a connection's errors (their codes) as they are.
        const answered = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
        throw answered === undefined ? error : new Error(awsProblem(error));
      }
    },
    async close() {
      broken = true;
      client.destroy();
    },
  };
}
