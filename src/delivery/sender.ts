import type { Socket } from 'node:net';
import { StringDecoder } from 'node:string_decoder';
import { Agent, buildConnector, request } from 'undici';
import { allowListed, isPublicAddress } from '../domain/addresses.js';
import { parseRetryAfter } from '../domain/retry.js';

// Sends one signed webhook request. Live endpoints go through a connector that checks the address the
// socket actually connected to, after DNS, so IP literals, numeric host forms, IPv4-mapped IPv6 and names
// that resolve (or re-resolve) to private addresses are all refused before a byte is sent.

export interface SendRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
  livemode: boolean;
}

export interface SendResult {
  ok: boolean;
  responseStatus: number | null;
  responseBody: string | null;
  error: string | null;
  retryAfterMs: number | null;
  durationMs: number;
}

export interface SenderOptions {
  attemptTimeoutMs: number;
  /** Sockets per origin: bounds what one receiver can hold open. */
  connectionsPerOrigin: number;
  responseBodyLimit: number;
  ssrfAllow: string[];
}

export class BlockedAddressError extends Error {
  readonly code = 'HERALD_BLOCKED_ADDRESS';
}

type Connector = ReturnType<typeof buildConnector>;

/**
 * Connects in two steps so that nothing, not even a TLS hello, reaches a non-public address: a plain TCP
 * connection first, whose peer address (after DNS, whatever the URL spelled) is checked, then TLS over it.
 */
function guardedConnector(base: Connector, allow: string[]): Connector {
  return (options, callback) => {
    const https = options.protocol === 'https:';
    const port = options.port || (https ? '443' : '80');
    base({ ...options, protocol: 'http:', port, httpSocket: undefined }, (error, socket) => {
      if (error || !socket) return callback(error ?? new Error('connect failed'), null);
      const address = (socket as Socket).remoteAddress ?? '';
      if (!isPublicAddress(address) && !allowListed(address, allow) && !allow.includes(options.hostname)) {
        socket.destroy();
        return callback(new BlockedAddressError(`refused to connect to non-public address ${address} (Live endpoints must resolve to public addresses)`), null);
      }
      if (!https) return callback(null, socket);
      base({ ...options, port, httpSocket: socket as Socket }, (tlsError, tlsSocket) => {
        if (tlsError || !tlsSocket) {
          socket.destroy();
          return callback(tlsError ?? new Error('TLS connect failed'), null);
        }
        callback(null, tlsSocket);
      });
    });
  };
}

function describe(error: unknown, timeoutMs: number): string {
  const e = error as { code?: string; name?: string; message?: string; cause?: unknown };
  if (e.name === 'TimeoutError' || e.name === 'AbortError' || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT') {
    return `timed out after ${timeoutMs}ms`;
  }
  if (e.code === 'HERALD_BLOCKED_ADDRESS') return e.message ?? 'blocked address';
  const cause = e.cause as { code?: string; message?: string } | undefined;
  const code = e.code ?? cause?.code;
  const text = (e.message && e.message !== 'fetch failed' ? e.message : cause?.message) ?? 'request failed';
  return (code && !text.includes(code) ? `${code}: ${text}` : text).slice(0, 500);
}

export class Sender {
  private readonly test: Agent;
  private readonly live: Agent;

  constructor(private readonly options: SenderOptions) {
    const common = { connections: options.connectionsPerOrigin, keepAliveTimeout: 4_000, connectTimeout: options.attemptTimeoutMs };
    this.test = new Agent(common);
    this.live = new Agent({ ...common, connect: guardedConnector(buildConnector({ timeout: options.attemptTimeoutMs }), options.ssrfAllow) });
  }

  async send(input: SendRequest): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    try {
      const response = await request(input.url, {
        method: 'POST',
        headers: input.headers,
        body: input.body,
        dispatcher: input.livemode ? this.live : this.test,
        // One bound for the whole attempt: connect, headers and body.
        signal: AbortSignal.timeout(this.options.attemptTimeoutMs),
      });
      const responseBody = await this.readCapped(response.body);
      const status = response.statusCode;
      const retryAfterHeader = status === 429 || status === 503 ? response.headers['retry-after'] : undefined;
      return {
        ok: status >= 200 && status < 300,
        responseStatus: status,
        responseBody,
        error: status >= 200 && status < 300 ? null : status >= 300 && status < 400 ? `redirect (${status}) not followed` : `HTTP ${status}`,
        retryAfterMs: parseRetryAfter(Array.isArray(retryAfterHeader) ? retryAfterHeader[0] : retryAfterHeader, Date.now()),
        durationMs: elapsed(),
      };
    } catch (error) {
      return { ok: false, responseStatus: null, responseBody: null, error: describe(error, this.options.attemptTimeoutMs), retryAfterMs: null, durationMs: elapsed() };
    }
  }

  /** Keeps at most responseBodyLimit bytes of the answer and discards the rest. */
  private async readCapped(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string | null> {
    const limit = this.options.responseBodyLimit;
    const parts: Buffer[] = [];
    let size = 0;
    for await (const chunk of body) {
      if (size < limit) parts.push(chunk.subarray(0, limit - size));
      size += chunk.length;
      if (size > 64 * 1024 + limit) {
        body.destroy();
        break;
      }
    }
    if (size === 0) return null;
    // A cut inside a multi-byte character leaves that character out rather than storing a broken one.
    return new StringDecoder('utf8').write(Buffer.concat(parts));
  }

  async close(): Promise<void> {
    await Promise.all([this.test.close(), this.live.close()]);
  }
}
