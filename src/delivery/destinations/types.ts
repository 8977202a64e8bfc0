import type { Destination, DestinationSettings, TemplateValues } from '../../domain/destinations.js';

// What a destination's client (one per broker type, in this folder) is given and gives back.

/** One signed message to publish: the bytes an HTTP receiver would get, and the headers that travel with them. */
export interface Publication {
  /** The webhook-id (the message id): the broker's dedupe id where it has one. */
  id: string;
  eventType: string;
  /** The signed body, `{type, timestamp, data}`. */
  body: string;
  /** The signature headers (webhook-*, svix-* where asked), trace context and the endpoint's own headers. */
  headers: Record<string, string>;
  /** What the destination's templates are filled in with. */
  values: TemplateValues;
}

/** Where a connection may reach: the resolved address its host is allowed to connect to. */
export type HostGuard = (host: string) => Promise<string>;

/** The endpoint's address rules, for a client that connects by itself (guard), or by a lookup of ours. */
export interface Network {
  guard: HostGuard;
  publicOnly: boolean;
  allow: string[];
}

/**
 * An open connection to one destination: it publishes and answers with the broker's acknowledgement in
 * words (`rabbitmq: confirmed`), or rejects with what went wrong. `broken` once it cannot be used again.
 */
export interface Connection {
  /** `settings`: the destination's as the attempt read them (a topic or a QoS may change on a connection kept open). */
  publish(message: Publication, settings: DestinationSettings): Promise<string>;
  readonly broken: boolean;
  close(): Promise<void>;
}

/** Opens a connection to a destination of one type; every host it connects to is judged by `network` first. */
export type Connect = (destination: Destination, network: Network, timeoutMs: number) => Promise<Connection>;
