import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

// A real HTTP server in front of the service, for the retry tests: each request is recorded, then
// forwarded or not as `plan` says, and answered with the service's answer or with what a failing
// load balancer would send after forwarding it (a 502 page, a dropped connection).

export interface Seen {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
}

export type Step =
  /** Forward, answer with the service's answer. */
  | 'forward'
  /** Forward (the service acts on it), then answer 502 with an HTML page instead. */
  | 'forward-then-502'
  /** Forward (the service acts on it), then drop the connection without answering. */
  | 'forward-then-drop'
  /** Never answer. */
  | 'hang'
  /** Answer this without forwarding. */
  | { status: number; headers?: Record<string, string> };

export class Front {
  readonly seen: Seen[] = [];
  plan: (request: Seen, index: number) => Step = () => 'forward';
  url = '';
  private server!: Server;

  constructor(private readonly target: string) {}

  async start(): Promise<this> {
    this.server = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const seen: Seen = { method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers };
      this.seen.push(seen);
      const step = this.plan(seen, this.seen.length - 1);
      if (step === 'hang') return;
      if (typeof step === 'object') {
        res.writeHead(step.status, { 'content-type': 'text/plain', ...step.headers });
        return void res.end('not now');
      }
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(
          (entry): entry is [string, string] => typeof entry[1] === 'string' && entry[0] !== 'host',
        ),
      );
      const answer = await fetch(this.target + seen.path, {
        method: seen.method,
        headers,
        body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
      });
      const body = Buffer.from(await answer.arrayBuffer());
      if (step === 'forward-then-drop') return void req.socket.destroy();
      if (step === 'forward-then-502') {
        res.writeHead(502, { 'content-type': 'text/html' });
        return void res.end('<html><body>502 Bad Gateway</body></html>');
      }
      const kept = ['content-type', 'retry-after', 'x-request-id'];
      res.writeHead(answer.status, Object.fromEntries([...answer.headers].filter(([name]) => kept.includes(name))));
      res.end(body);
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** What reached the front for one method and path. */
  requests(method: string, path: string): Seen[] {
    return this.seen.filter((request) => request.method === method && request.path === path);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
