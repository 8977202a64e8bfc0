import { isIP } from 'node:net';
import { LRUCache } from 'lru-cache';
import type { Destination, DestinationType } from '../../domain/destinations.js';
import { refusedAddress } from '../../domain/addresses.js';
import { BlockedAddressError, guardedLookup, type SendRequest, type SendResult } from '../sender.js';
import type { Connect, Connection, HostGuard, Publication } from './types.js';

// Publishes attempts to destinations that are not HTTP receivers. A worker process keeps one connection
// per destination (its type, address, credentials and connection settings), opened on first use, reused
// by every attempt to it, closed after IDLE_MS unused, when it breaks, and on shutdown; at most
// MAX_CONNECTIONS at once (the least recently used goes first). Every host is resolved and checked
// against the endpoint's address rules before a connection is made to the address that passed.

/**
 * How a worker process connects to each type. Each type's client library is loaded when its first
 * connection opens: most processes deliver to HTTP alone, and every process (the API's, each test's, each
 * CLI command's) would otherwise pay for loading all seven at start.
 */
function connectors(options: PublisherOptions): Partial<Record<DestinationType, LoadedOnFirstUse>> {
  return {
    rabbitmq: onFirstUse(async () => (await import('./rabbitmq.js')).connectRabbitmq),
    nats: onFirstUse(async () => (await import('./nats.js')).connectNats),
    redis: onFirstUse(async () => (await import('./redis.js')).connectRedis),
    mqtt: onFirstUse(async () => (await import('./mqtt.js')).connectMqtt),
    kafka: onFirstUse(async () => (await import('./kafka.js')).kafkaConnector(options.kafkaIdempotent)),
    sqs: onFirstUse(async () => (await import('./sqs.js')).connectSqs),
    s3: onFirstUse(async () => (await import('./s3.js')).connectS3),
  };
}

/** A connector whose module is imported when first asked for (`ready`), apart from any attempt's deadline. */
type LoadedOnFirstUse = Connect & { ready(): Promise<Connect> };

/** A connector imported on first use (a failed import is tried again next time). */
function onFirstUse(load: () => Promise<Connect>): LoadedOnFirstUse {
  let loaded: Promise<Connect> | null = null;
  const ready = () =>
    (loaded ??= load().catch((error) => {
      loaded = null;
      throw error;
    }));
  const connect: Connect = async (destination, network, timeoutMs) => (await ready())(destination, network, timeoutMs);
  return Object.assign(connect, { ready });
}

export interface PublisherOptions {
  attemptTimeoutMs: number;
  ssrfAllow: string[];
  /** HERALD_KAFKA_IDEMPOTENT. */
  kafkaIdempotent: boolean;
}

/** Connections one worker process holds open at most. */
const MAX_CONNECTIONS = 256;
/** A connection unused this long is closed. */
const IDLE_MS = 60_000;

/** The request's headers that are HTTP's own: the others travel with a published message. */
const HTTP_ONLY = new Set(['content-type', 'user-agent']);

interface Pooled {
  connection: Promise<Connection>;
  usedAt: number;
}

export class Publishers {
  /** Connections by poolKey; one dropped (evicted, broken, idle, or at close) is closed (closeConnection). */
  private readonly pool = new LRUCache<string, Pooled>({
    max: MAX_CONNECTIONS,
    dispose: (pooled) => this.closeConnection(pooled),
  });
  /** Closes under way, which close() waits for. */
  private readonly closing = new Set<Promise<void>>();
  private readonly sweep: NodeJS.Timeout;
  private readonly connectors: Partial<Record<DestinationType, LoadedOnFirstUse>>;

  constructor(
    private readonly options: PublisherOptions,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.connectors = connectors(options);
    this.sweep = setInterval(() => this.closeIdle(), IDLE_MS / 4).unref();
  }

  /**
   * Publishes one attempt's signed request to its destination; the result reads as an HTTP attempt's would.
   * The request's headers travel as they are: carriedHeaders has left out HTTP's own.
   */
  async publish(destination: Destination, request: SendRequest, message: Omit<Publication, 'body' | 'headers'>) {
    const started = performance.now();
    const publication: Publication = { ...message, body: request.body, headers: request.headers };
    const timeoutMs = this.options.attemptTimeoutMs;
    const key = poolKey(destination, request.publicOnly);
    let connection: Connection | null = null;
    try {
      // The type's client library, imported once per process, outside the attempt's deadline.
      await this.connectors[destination.type]?.ready();
      const answer = await withDeadline(
        this.connection(key, destination, request.publicOnly).then((c) => {
          connection = c;
          return c.publish(publication, destination.settings);
        }),
        timeoutMs,
      );
      return result(true, answer, null, started);
    } catch (error) {
      // A message the broker refused (a nack, no route, no stream) leaves the connection as it is; one
      // that broke, or went unanswered, is closed, and the next attempt opens a fresh one.
      if (connection === null || (connection as Connection).broken || error instanceof Unanswered)
        this.pool.delete(key);
      return result(false, null, `${destination.type}: ${describe(error)}`, started);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.sweep);
    this.pool.clear();
    await Promise.all(this.closing);
  }

  private connection(key: string, destination: Destination, publicOnly: boolean): Promise<Connection> {
    const pooled = this.pool.get(key);
    if (pooled) {
      pooled.usedAt = this.now();
      return pooled.connection.then((c) => (c.broken ? this.reopen(key, destination, publicOnly) : c));
    }
    return this.open(key, destination, publicOnly);
  }

  private reopen(key: string, destination: Destination, publicOnly: boolean): Promise<Connection> {
    this.pool.delete(key);
    return this.open(key, destination, publicOnly);
  }

  private open(key: string, destination: Destination, publicOnly: boolean): Promise<Connection> {
    const connect = this.connectors[destination.type];
    if (!connect) return Promise.reject(new Error(`${destination.type} destinations are not delivered yet`));
    const allow = this.options.ssrfAllow;
    const network = { guard: hostGuard(publicOnly, allow), publicOnly, allow };
    const connection = connect(destination, network, this.options.attemptTimeoutMs);
    // A connection that failed to open is not kept: the attempt fails, and the next one tries again.
    connection.catch(() => this.pool.peek(key)?.connection === connection && this.pool.delete(key));
    // Past MAX_CONNECTIONS the least recently used is evicted, and closed.
    this.pool.set(key, { connection, usedAt: this.now() });
    return connection;
  }

  private closeConnection(pooled: Pooled): void {
    const closed: Promise<void> = pooled.connection
      .then(
        (c) => c.close().catch(() => {}),
        () => {},
      )
      .finally(() => this.closing.delete(closed));
    this.closing.add(closed);
  }

  private closeIdle(): void {
    const before = this.now() - IDLE_MS;
    const idle = [...this.pool.entries()].filter(([, pooled]) => pooled.usedAt < before);
    for (const [key] of idle) this.pool.delete(key);
  }
}

/** Connections are shared by destinations that connect the same way under the same address rule. */
function poolKey(destination: Destination, publicOnly: boolean): string {
  const { type, url, secrets, settings } = destination;
  // Settings that only shape a message (a topic, a key) do not make a connection of their own.
  const connecting = [
    settings.jetstream,
    settings.sasl,
    settings.tls,
    settings.region,
    settings.access_key_id,
    settings.endpoint_url,
  ];
  return JSON.stringify([type, url, secrets, connecting, publicOnly]);
}

/** The headers of a signed request that travel with a published message: all but HTTP's own. */
export function carriedHeaders(headers: Record<string, string>): Record<string, string> {
  const carried: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) if (!HTTP_ONLY.has(name)) carried[name] = value;
  return carried;
}

/** No acknowledgement within the attempt's time. */
class Unanswered extends Error {}

/**
 * A host's address under the endpoint's rule: an IP literal is judged as it is, a name by the addresses
 * its lookup returns (the first allowed one is connected to, so a name that re-resolves to a private
 * address is never reached).
 */
export function hostGuard(publicOnly: boolean, allow: string[]): HostGuard {
  const lookup = guardedLookup(publicOnly, allow);
  return async (host) => {
    if (isIP(host)) {
      const refused = refusedAddress(host, host, publicOnly, allow);
      if (refused) throw new BlockedAddressError(`refused to connect to ${refused}`);
      return host;
    }
    return new Promise((resolve, reject) =>
      lookup(host, {}, (error, address) => (error ? reject(error) : resolve(address as string))),
    );
  };
}

function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Unanswered(`no acknowledgement within ${ms}ms`)), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

/** What a client's error says, in words an attempt can show (never a credential: clients do not echo them). */
function describe(error: unknown): string {
  const e = error as { code?: string | number; message?: string; errno?: string };
  const code = typeof e.code === 'string' ? e.code : e.errno;
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host not found';
    case 'ETIMEDOUT':
      return 'connection timed out';
    case 'ECONNRESET':
      return 'connection reset';
  }
  const text = (e.message ?? String(error))
    .replace(/\s+/g, ' ')
    .replace(/([a-z]+:\/\/[^:\s/@]*:)[^@\s]*@/gi, '$1<redacted>@')
    .trim();
  return (text || 'publish failed').slice(0, 500);
}

function result(ok: boolean, answer: string | null, error: string | null, started: number): SendResult {
  return {
    ok,
    responseStatus: null,
    responseHeaders: null,
    responseBody: answer,
    error,
    retryAfterMs: null,
    durationMs: Math.round(performance.now() - started),
  };
}
