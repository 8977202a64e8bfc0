import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

// A real OAuth2 token server on loopback for the client credentials grant (RFC 6749 §4.4): it takes the
// client's id and secret by HTTP Basic or in the form body, issues opaque bearer tokens that expire after
// `lifetimeSeconds`, and says whether a token it issued is still good (for a receiver that checks them).

export interface TokenRequest {
  method: 'basic' | 'post';
  form: Record<string, string>;
}

export class TokenServer {
  readonly requests: TokenRequest[] = [];
  lifetimeSeconds = 3600;
  /** While set, every token request is answered with this status and an OAuth2 error. */
  failWith: number | null = null;
  private readonly issued = new Map<string, number>();
  private server!: Server;
  private issuedCount = 0;
  url = '';

  constructor(
    private readonly clientId: string,
    private readonly clientSecret: string,
  ) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
        const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '');
        let id = form.client_id;
        let secret = form.client_secret;
        if (basic) {
          const [user, password] = Buffer.from(basic[1]!, 'base64').toString('utf8').split(':');
          id = decodeURIComponent((user ?? '').replace(/\+/g, ' '));
          secret = decodeURIComponent((password ?? '').replace(/\+/g, ' '));
        }
        this.requests.push({ method: basic ? 'basic' : 'post', form });
        const answer = (status: number, body: object) =>
          res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
        if (this.failWith !== null) return answer(this.failWith, { error: 'server_error' });
        if (req.method !== 'POST' || form.grant_type !== 'client_credentials')
          return answer(400, { error: 'unsupported_grant_type' });
        if (id !== this.clientId || secret !== this.clientSecret) return answer(401, { error: 'invalid_client' });
        const token = `tok_${++this.issuedCount}_${Math.random().toString(36).slice(2)}`;
        this.issued.set(token, Date.now() + this.lifetimeSeconds * 1000);
        answer(200, { access_token: token, token_type: 'Bearer', expires_in: this.lifetimeSeconds });
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/oauth/token`;
    return this;
  }

  /** Whether an Authorization header carries a token this server issued that has not expired or been revoked. */
  accepts(authorization: string | string[] | undefined): boolean {
    const token = /^Bearer (.+)$/.exec(String(authorization ?? ''))?.[1];
    const until = token === undefined ? undefined : this.issued.get(token);
    return until !== undefined && until > Date.now();
  }

  /** Revokes every token issued so far. */
  revokeAll(): void {
    this.issued.clear();
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
