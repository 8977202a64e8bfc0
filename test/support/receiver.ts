import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

// A real webhook receiver on a random loopback port. Each request is recorded; `respond` decides the
// answer (status, headers, body, delay), so tests can make an endpoint fail, slow down or go away.

export interface Received {
  /** The request's method (absent where a test makes one up). */
  method?: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface Answer {
  status?: number;
  /** By name, or raw: names and values in one flat list, written as given (any name, `__proto__` too). */
  headers?: Record<string, string> | string[];
  body?: string | Buffer;
  /** Milliseconds to wait before answering. */
  delayMs?: number;
  /** Answer once this settles (after `delayMs`, if both are given). */
  until?: Promise<unknown>;
  /** Drop the connection without answering. */
  destroy?: boolean;
}

export class Receiver {
  readonly received: Received[] = [];
  respond: (request: Received) => Answer = () => ({ status: 200, body: 'ok' });
  private server!: Server;
  private waiters: { count: number; resolve: () => void }[] = [];
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const received: Received = {
          method: req.method ?? 'GET',
          path: req.url ?? '/',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          at: Date.now(),
        };
        this.received.push(received);
        this.waiters = this.waiters.filter((w) => (this.received.length >= w.count ? (w.resolve(), false) : true));
        const answer = this.respond(received);
        const reply = () => {
          if (answer.destroy) return void req.socket.destroy();
          res.writeHead(answer.status ?? 200, answer.headers ?? {});
          res.end(answer.body ?? '');
        };
        const delayed = answer.delayMs ? () => setTimeout(reply, answer.delayMs) : reply;
        if (answer.until) answer.until.then(delayed, delayed);
        else delayed();
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Resolves once `count` requests have arrived, or rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs = 10_000): Promise<void> {
    if (this.received.length >= count) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`receiver got ${this.received.length} of ${count} requests in ${timeoutMs}ms`)),
        timeoutMs,
      );
      this.waiters.push({ count, resolve: () => (clearTimeout(timer), resolve()) });
    });
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Polls `check` until it returns a truthy value, or fails after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined | null | false>,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
