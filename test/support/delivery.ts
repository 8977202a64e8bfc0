import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import type { TestContext } from 'node:test';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { startTestService, TEST_SECRET_KEY, type TestService } from './service.js';
import { Endpoints } from '../../src/store/endpoints.js';
import { SecretBox } from '../../src/domain/secrets.js';
import { bootstrap, type Client } from './client.js';
import { eventually, Receiver, type Received } from './receiver.js';

// Shared set-up for the delivery tests: a real service, a real receiver, an organization with one
// application, and small readers for deliveries and attempts through the public API.

export interface Attempt {
  attempt_number: number;
  trigger: 'scheduled' | 'manual';
  status: 'success' | 'failed' | 'cancelled';
  response_status: number | null;
  /** The request a transformation made; null: the plain one. */
  request?: { method: string; url: string; body: string } | null;
  request_headers: Record<string, string> | null;
  response_headers: Record<string, string> | null;
  response_body: string | null;
  error: string | null;
  duration_ms: number;
  created_at: string;
}

export interface DeliveryRead {
  id: string;
  message_id: string;
  endpoint_id: string;
  status: 'pending' | 'success' | 'failed' | 'disabled';
  attempt_count: number;
  next_attempt_at: string | null;
  attempts: Attempt[];
}

export interface Setup {
  service: TestService;
  api: Client;
  live: Client;
  orgId: string;
  appId: string;
  liveAppId: string;
  /** Creates a Test endpoint (via the API) and returns its id and signing secret. */
  endpoint(url: string, body?: Record<string, unknown>): Promise<{ id: string; secret: string }>;
  /** Emits a message with the Test key and returns its id and delivery ids. */
  emit(payload?: Record<string, unknown>, eventType?: string): Promise<{ id: string; deliveryIds: string[] }>;
  delivery(id: string): Promise<DeliveryRead>;
  /** Polls a delivery until `check` holds. */
  until(id: string, check: (d: DeliveryRead) => boolean, what: string, timeoutMs?: number): Promise<DeliveryRead>;
}

export async function setup(t: TestContext, env: Record<string, string> = {}): Promise<Setup> {
  const service = await startTestService({ HERALD_RETRY_SCHEDULE: '0s,200ms,400ms', ...env });
  t.after(() => service.stop());
  const { test: api, live, org } = await bootstrap(service.url);
  const app = await api.post('/api/v1/applications', { name: 'Acme' });
  if (app.status !== 201) throw new Error(`application: ${app.status}`);
  const liveApp = await live.post('/api/v1/applications', { name: 'Acme live' });
  const s: Setup = {
    service,
    api,
    live,
    orgId: org.id,
    appId: app.body.id,
    liveAppId: liveApp.body.id,
    async endpoint(url, body = {}) {
      const reply = await api.post('/api/v1/endpoints', { app_id: app.body.id, url, ...body });
      if (reply.status !== 201) throw new Error(`endpoint: ${reply.status} ${JSON.stringify(reply.body)}`);
      return { id: reply.body.id, secret: reply.body.signing_secret };
    },
    async emit(payload = { n: 1 }, eventType = 'invoice.paid') {
      const reply = await api.post('/api/v1/messages', { app_id: app.body.id, event_type: eventType, payload });
      if (reply.status !== 201) throw new Error(`emit: ${reply.status} ${JSON.stringify(reply.body)}`);
      return { id: reply.body.id, deliveryIds: reply.body.delivery_ids };
    },
    async delivery(id) {
      const reply = await api.get(`/api/v1/deliveries/${id}`);
      if (reply.status !== 200) throw new Error(`delivery ${id}: ${reply.status}`);
      return reply.body as DeliveryRead;
    },
    async until(id, check, what, timeoutMs = 15_000) {
      let last: DeliveryRead | undefined;
      try {
        return await eventually(
          async () => {
            last = await s.delivery(id);
            return check(last) ? last : undefined;
          },
          timeoutMs,
          what,
        );
      } catch (error) {
        throw new Error(`${(error as Error).message}; last read: ${JSON.stringify(last)}`);
      }
    },
  };
  return s;
}

export async function startReceiver(t: TestContext, respond?: Receiver['respond']): Promise<Receiver> {
  const receiver = await new Receiver().start();
  if (respond) receiver.respond = respond;
  t.after(() => receiver.stop());
  return receiver;
}

/** The Standard Webhooks headers of a received request, as the verifiers want them. */
export function webhookHeaders(r: Received): Record<string, string> {
  return {
    'webhook-id': String(r.headers['webhook-id']),
    'webhook-timestamp': String(r.headers['webhook-timestamp']),
    'webhook-signature': String(r.headers['webhook-signature']),
  };
}

/** Verifies with both third-party libraries; throws when either refuses. */
export function verifyWithLibraries(r: Received, secret: string): unknown {
  const a = new StandardWebhook(secret).verify(r.body, webhookHeaders(r));
  const b = new SvixWebhook(secret).verify(r.body, webhookHeaders(r));
  return [a, b];
}

export function verifies(r: Received, secret: string): boolean {
  try {
    verifyWithLibraries(r, secret);
    return true;
  } catch {
    return false;
  }
}

/** Milliseconds between two attempts' recorded times. */
/** A loopback port with nothing listening on it (it was free a moment ago). */
export async function closedPort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export const gapMs = (earlier: Attempt, later: Attempt) =>
  Date.parse(later.created_at) - Date.parse(earlier.created_at);

/** Attempts oldest first (the API lists them newest first). */
export const oldestFirst = (d: DeliveryRead) => [...d.attempts].reverse();

/**
 * A receiver that also sees sockets: it counts requests open at once (per path prefix), the distinct
 * connections used, and lets a test hold requests open until it releases them.
 */
export class SocketReceiver {
  readonly requests: { path: string; headers: IncomingHttpHeaders; body: string; socket: Socket; at: number }[] = [];
  readonly sockets = new Set<Socket>();
  open = 0;
  maxOpen = 0;
  /** Decides how long to hold a request before answering 200 (ms); Infinity holds until release(). */
  holdMs: (path: string) => number = () => 0;
  private held: (() => void)[] = [];
  private server!: Server;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.sockets.add(req.socket);
        this.requests.push({
          path: req.url ?? '/',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          socket: req.socket,
          at: Date.now(),
        });
        this.open++;
        this.maxOpen = Math.max(this.maxOpen, this.open);
        const answer = () => {
          this.open--;
          if (!res.destroyed) res.end('ok');
        };
        const hold = this.holdMs(req.url ?? '/');
        if (hold === Infinity) this.held.push(answer);
        else if (hold > 0) setTimeout(answer, hold);
        else answer();
      });
    });
    this.server.keepAliveTimeout = 30_000;
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  count(prefix: string): number {
    return this.requests.filter((r) => r.path.startsWith(prefix)).length;
  }

  release(): void {
    const held = this.held;
    this.held = [];
    for (const answer of held) answer();
  }

  async stop(): Promise<void> {
    if (!this.server.listening) return;
    this.release();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * Reseals every endpoint of the service's store under a new master key (as `herald secrets reseal` does),
 * and returns how many it resealed, the endpoint's row after it, and an Endpoints that opens with the new key only.
 */
export async function resealedUnderNewKey(s: Setup, endpointId: string) {
  const NEW_KEY = 'a-new-master-key-that-is-long-enough-0123456789';
  const resealer = new Endpoints(s.service.store.ctx, new SecretBox(NEW_KEY, [TEST_SECRET_KEY]));
  const resealed = (await resealer.resealBatch(null, 10)).resealed;
  const row = await s.service.store.ctx.db
    .selectFrom('endpoints')
    .selectAll()
    .where('id', '=', endpointId)
    .executeTakeFirstOrThrow();
  return { resealed, row, opener: new Endpoints(s.service.store.ctx, new SecretBox(NEW_KEY)) };
}
