import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createProxy, type ProxyServer } from 'proxy';

// A real forward proxy on loopback (the npm `proxy` server: CONNECT tunnels and absolute-form requests),
// logging what passes through it. With `credentials` it asks for them (407 without the right ones).

export interface ProxyLogEntry {
  method: string;
  /** The absolute URL of a forwarded request, or host:port of a CONNECT. */
  target: string;
  /** The Proxy-Authorization the client sent (or undefined). */
  authorization: string | undefined;
}

export class ForwardProxy {
  readonly log: ProxyLogEntry[] = [];
  private server: ProxyServer | null = null;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(private readonly credentials?: { user: string; password: string }) {}

  get url(): string {
    const auth = this.credentials ? `${this.credentials.user}:${this.credentials.password}@` : '';
    return `http://${auth}127.0.0.1:${this.port}`;
  }

  /** Starts listening (on `port` again after a stop, if it was started before). */
  async start(): Promise<this> {
    const server = createProxy(createServer());
    const record = (req: IncomingMessage) =>
      this.log.push({
        method: req.method ?? '',
        target: req.url ?? '',
        authorization: req.headers['proxy-authorization'],
      });
    server.prependListener('request', record);
    server.prependListener('connect', record);
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    if (this.credentials) {
      const expected = `Basic ${Buffer.from(`${this.credentials.user}:${this.credentials.password}`).toString('base64')}`;
      server.authenticate = (req) => req.headers['proxy-authorization'] === expected;
    }
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
    return this;
  }

  /** Stops listening and cuts every connection (tunnels too). */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
