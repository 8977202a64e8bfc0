import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Issued } from './certificates.js';

// A real https receiver on loopback. With `clientCa` it demands a client certificate that CA issued
// (mutual TLS): a handshake without one, or with another CA's, fails. Records each request with the
// common name of the client certificate it came with.

export interface TlsReceived {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  clientName: string | null;
}

export class TlsReceiver {
  readonly received: TlsReceived[] = [];
  /** Failed handshakes (a missing or untrusted client certificate). */
  readonly refused: string[] = [];
  private server!: Server;
  url = '';

  constructor(
    private readonly identity: Issued,
    private readonly clientCa?: string,
  ) {}

  async start(): Promise<this> {
    this.server = createServer(
      {
        cert: this.identity.cert,
        key: this.identity.key,
        ...(this.clientCa ? { ca: this.clientCa, requestCert: true, rejectUnauthorized: true } : {}),
      },
      (req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const peer = (req.socket as TLSSocket).getPeerCertificate();
          this.received.push({
            path: req.url ?? '/',
            headers: req.headers,
            body: Buffer.concat(chunks).toString('utf8'),
            clientName: peer?.subject?.CN ? String(peer.subject.CN) : null,
          });
          res.writeHead(200).end('ok');
        });
      },
    );
    this.server.on('tlsClientError', (error) => this.refused.push(error.message));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `https://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
