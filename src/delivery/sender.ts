import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction, Socket } from 'node:net';
import { StringDecoder } from 'node:string_decoder';
import { createHash } from 'node:crypto';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import { bypassesProxy, ProxyPrecheck, proxyDispatcher } from './proxy.js';
import type { ReceiverTls } from '../domain/pem.js';
import { OAuthTokens, type TokenAnswer } from './oauth-tokens.js';
import type { OAuth2Client } from '../domain/endpoint-auth.js';
import { parseAddress, refusedAddress, refusedKind } from '../domain/addresses.js';
import { parseRetryAfter } from '../domain/retry.js';
import { headerBlock } from '../domain/headers.js';

// Sends one signed webhook request. Every connection is checked against the endpoint's address rule
// (refusedAddress) before it is made: an IP literal before connecting, a name by the addresses its DNS
// lookup returns (those refused are left out, so a name that resolves, or re-resolves, to a private
// address is never connected to, not even a TCP handshake that would tell an open port from a closed one).
// The address the socket reached is checked again before a byte is sent.

export interface SendRequest {
  url: string;
  /** POST, or what the endpoint's transformation chose (PUT, PATCH); absent: POST. */
  method?: string;
  body: string;
  headers: Record<string, string>;
  /** Public addresses only (Live endpoints, and those made in a portal); otherwise anything but link-local. */
  publicOnly: boolean;
  /** The endpoint's client certificate and key, and the CA bundle its receiver's certificate is checked against. */
  tls?: ReceiverTls | null | undefined;
  /** The endpoint's OAuth2 client: the request carries a bearer token from its token server. */
  auth?: { endpointId: string; client: OAuth2Client } | null | undefined;
}

export interface SendResult {
  ok: boolean;
  responseStatus: number | null;
  /** The answer's headers as a header block (headerBlock); null: no answer. */
  responseHeaders: string | null;
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
  /** HERALD_OUTBOUND_PROXY; null or absent: requests go direct. */
  outboundProxy?: string | null | undefined;
  /** HERALD_NO_PROXY: hosts and ranges that go direct although a proxy is set. */
  noProxy?: string[] | undefined;
}

export class BlockedAddressError extends Error {
  readonly code = 'HERALD_BLOCKED_ADDRESS';
}

type Connector = ReturnType<typeof buildConnector>;

/**
 * A DNS lookup for the connection that keeps only the addresses the endpoint may reach. When none is
 * left the connect fails without contacting any, and the error does not say which addresses the name
 * has: attempt errors are shown to whoever made the endpoint, who must not learn the operator's network.
 */
export function guardedLookup(
  publicOnly: boolean,
  allow: string[],
  lookup: typeof dnsLookup = dnsLookup,
): LookupFunction {
  return (hostname, options, callback) => {
    lookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      const kept = addresses.filter(({ address }) => refusedAddress(address, hostname, publicOnly, allow) === null);
      if (kept.length === 0) {
        return callback(
          new BlockedAddressError(`refused to connect: ${hostname} resolves only to ${refusedKind(publicOnly)}`),
          '',
          0,
        );
      }
      if (options.all) callback(null, kept);
      else callback(null, kept[0]!.address, kept[0]!.family);
    });
  };
}

/**
 * Connects in two steps so that nothing, not even a TLS hello, reaches a refused address (refusedAddress):
 * a plain TCP connection first (an IP literal is checked before it, a name by guardedLookup, which the
 * base connector must use), whose peer address is checked again, then TLS over it. The whole connect (DNS, TCP, TLS) is cut at `timeoutMs` on a timer of its own: undici
 * applies an attempt's abort signal only once the request is on a connection, and its own connect timer
 * is coarse (an attempt of 1 s ended after 1.5 s). One timer per connection, not per request.
 */
export function guardedConnector(base: Connector, publicOnly: boolean, allow: string[], timeoutMs?: number): Connector {
  return (options, callback) => {
    const https = options.protocol === 'https:';
    const port = options.port || (https ? '443' : '80');
    let settled = false;
    /** The TCP connection once made: a TLS handshake over it that runs out of time is ended by closing it. */
    let tcp: Socket | undefined;
    const timer =
      timeoutMs === undefined
        ? null
        : setTimeout(() => {
            finish(new AttemptTimeout(`connect took longer than ${timeoutMs}ms`), null);
            tcp?.destroy();
          }, timeoutMs);
    const finish: Parameters<Connector>[1] = (error, socket) => {
      // A connect that finishes after its time ran out is closed (a TCP connect that hangs on is ended by
      // undici's own, later, connect timer).
      if (settled) return void socket?.destroy();
      settled = true;
      if (timer) clearTimeout(timer);
      if (error) callback(error, null);
      else callback(null, socket!);
    };
    const literal =
      parseAddress(options.hostname) && refusedAddress(options.hostname, options.hostname, publicOnly, allow);
    if (literal) return finish(new BlockedAddressError(`refused to connect to ${literal}`), null);
    base({ ...options, protocol: 'http:', port, httpSocket: undefined }, (error, socket) => {
      if (error || !socket) return finish(error ?? new Error('connect failed'), null);
      if (settled) return void socket.destroy(); // its time ran out meanwhile
      const refused = refusedAddress((socket as Socket).remoteAddress ?? '', options.hostname, publicOnly, allow);
      if (refused) {
        socket.destroy();
        return finish(new BlockedAddressError(`refused to connect to ${refused}`), null);
      }
      if (!https) return finish(null, socket);
      tcp = socket as Socket;
      base({ ...options, port, httpSocket: tcp }, (tlsError, tlsSocket) => {
        if (tlsError || !tlsSocket) {
          socket.destroy();
          return finish(tlsError ?? new Error('TLS connect failed'), null);
        }
        finish(null, tlsSocket);
      });
    });
  };
}

function describe(error: unknown, timeoutMs: number): string {
  const e = error as { code?: string; name?: string; message?: string; cause?: unknown };
  // Herald's own failures (a refused address, the proxy, the token server) say what happened themselves.
  if (e.code?.startsWith('HERALD_')) return (e.message ?? e.code).slice(0, 500);
  if (/^Proxy response \((\d+)\)/.test(e.message ?? ''))
    return `egress proxy did not open the tunnel (HTTP ${/\((\d+)\)/.exec(e.message!)![1]})`;
  if (e.message === 'Proxy Authentication Required (407)') return 'egress proxy refused the request (HTTP 407)';
  if (
    e.name === 'TimeoutError' ||
    e.name === 'AbortError' ||
    e.code === 'UND_ERR_HEADERS_TIMEOUT' ||
    e.code === 'UND_ERR_BODY_TIMEOUT'
  ) {
    return `timed out after ${timeoutMs}ms`;
  }
  const cause = e.cause as { code?: string; message?: string } | undefined;
  const code = e.code ?? cause?.code;
  const text = (e.message && e.message !== 'fetch failed' ? e.message : cause?.message) ?? 'request failed';
  return (code && !text.includes(code) ? `${code}: ${text}` : text).slice(0, 500);
}

/** What an attempt that ran out of time fails with (`describe` reads it as a timeout). */
class AttemptTimeout extends Error {
  override readonly name = 'TimeoutError';
}

/**
 * A receiver's answer as text every store keeps as it is: bytes that are not UTF-8 and NUL characters
 * (which PostgreSQL's text columns refuse, so the outcome could not be recorded) become U+FFFD. A cut inside
 * a multi-byte character at the end leaves that character out rather than storing a broken one.
 */
function storableText(bytes: Buffer): string {
  return new StringDecoder('utf8').write(bytes).replaceAll('\u0000', '\uFFFD');
}

/**
 * One attempt's request, as an undici dispatch handler: it collects the status, Retry-After and up to
 * `limit` bytes of the answer, and settles once, with the answer, an error or its timeout. A handler of
 * its own costs about a fifth less CPU per request than the dispatcher's request(), which makes a promise,
 * an abort signal and a readable stream per response.
 * Exported for its tests only: the Sender is how the rest of the service makes attempts.
 */
export class Attempt implements Dispatcher.DispatchHandler {
  /** When (performance.now()) the attempt times out. */
  readonly deadline: number;
  /**
   * Null once the attempt is over. The deadline queue may hold a finished attempt for a whole timeout
   * (behind a hung one), and what settle holds (its promise, and so the result) must not stay with it
   * (finish clears the rest).
   */
  private settle: ((result: SendResult) => void) | null;
  private abortRequest: ((reason?: Error) => void) | null = null;
  /** Why the attempt ended before undici was done with the request: if undici has not handed it over yet, it is dropped then, unwritten (onConnect). */
  private endedEarly: Error | null = null;
  private status = 0;
  private headers: string | null = null;
  private retryAfter: string | undefined;
  private parts: Buffer[] = [];
  private size = 0;

  constructor(
    private readonly started: number,
    private readonly timeoutMs: number,
    private readonly limit: number,
    settle: (result: SendResult) => void,
  ) {
    this.deadline = started + timeoutMs;
    this.settle = settle;
  }

  get over(): boolean {
    return this.settle === null;
  }

  /** undici hands the request a connection, just before writing it. */
  onConnect(abort: (reason?: Error) => void): void {
    // Its deadline may have passed with the sweep still to come (it runs after this turn's I/O).
    if (!this.endedEarly && performance.now() >= this.deadline) this.timeOut();
    // Over already: it must not be written (a retry is coming). Thrown rather than aborted: undici then
    // drops the request and keeps the connection for the next one; its abort would close the connection.
    if (this.endedEarly) throw this.endedEarly;
    this.abortRequest = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    this.status = statusCode;
    // Header bytes are Latin-1 (one character per byte), as HTTP sends them.
    const pairs: [string, string][] = [];
    for (let i = 0; i + 1 < rawHeaders.length; i += 2)
      pairs.push([rawHeaders[i]!.toString('latin1').toLowerCase(), rawHeaders[i + 1]!.toString('latin1')]);
    // Kept redacted: a receiver's cookies and tokens are shown to whoever reads the attempt.
    this.headers = headerBlock(pairs, true);
    if (statusCode === 429 || statusCode === 503) this.retryAfter = pairs.find(([name]) => name === 'retry-after')?.[1];
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.size < this.limit) this.parts.push(chunk.subarray(0, this.limit - this.size));
    this.size += chunk.length;
    // Far past what we keep: stop reading (the connection is closed rather than drained).
    if (this.size > 64 * 1024 + this.limit) this.end(new Error('response body past what is kept'));
    return true;
  }

  onComplete(): void {
    this.answered();
  }

  onError(error: Error): void {
    this.failed(error);
  }

  /** The deadline passed (AttemptDeadlines, or undici handing the request over late). */
  timeOut(): void {
    if (this.over) return;
    this.end(new AttemptTimeout(`attempt took longer than ${this.timeoutMs}ms`), true);
  }

  /**
   * Settles the attempt (a failure, or what was answered so far) and aborts its request; one still
   * waiting for a connection is dropped when undici hands it over (onConnect).
   */
  private end(reason: Error, asFailure = false): void {
    if (this.endedEarly) return;
    this.endedEarly = reason;
    const abort = this.abortRequest;
    if (asFailure) this.failed(reason);
    else this.answered();
    abort?.(reason);
  }

  private failed(error: Error): void {
    this.finish({
      ok: false,
      responseStatus: null,
      responseHeaders: null,
      responseBody: null,
      error: describe(error, this.timeoutMs),
      retryAfterMs: null,
      durationMs: this.elapsed(),
    });
  }

  private answered(): void {
    if (this.over) return;
    const status = this.status;
    const ok = status >= 200 && status < 300;
    this.finish({
      ok,
      responseStatus: status,
      responseHeaders: this.headers,
      responseBody: this.size === 0 ? null : storableText(Buffer.concat(this.parts)),
      error: ok ? null : status >= 300 && status < 400 ? `redirect (${status}) not followed` : `HTTP ${status}`,
      retryAfterMs: parseRetryAfter(this.retryAfter, Date.now()),
      durationMs: this.elapsed(),
    });
  }

  /** Settles the attempt once; later calls (undici's callbacks after an abort) change nothing. */
  private finish(result: SendResult): void {
    const settle = this.settle;
    if (!settle) return;
    this.settle = null;
    // Nor what undici's abort holds (the request and its connection), nor the body read.
    this.abortRequest = null;
    this.parts = [];
    settle(result);
  }

  private elapsed(): number {
    return Math.round(performance.now() - this.started);
  }
}

/**
 * The deadlines of every attempt in flight, on one timer (a timer per attempt cost more than undici's own
 * work per request). Every deadline is now + the same timeout, so they come due in the order they were
 * made: a queue, swept from its front.
 */
class AttemptDeadlines {
  /** Attempts in order of their deadline from `head` on. */
  private queue: Attempt[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | null = null;
  /** The sweep, once its timer has run: it waits for the I/O of that turn of the event loop (schedule). */
  private sweepSoon: NodeJS.Immediate | null = null;

  constructor(private readonly timeoutMs: number) {}

  add(attempt: Attempt): void {
    // Attempts mostly end in the order they started: step over the finished ones at the front.
    while (this.head < this.queue.length && this.queue[this.head]!.over) this.head++;
    this.compact();
    this.queue.push(attempt);
    if (!this.timer && !this.sweepSoon) this.schedule(this.timeoutMs);
  }

  /**
   * Drops the entries before `head` once they are half the array. An index rather than shift(): behind a
   * hung attempt thousands of finished ones wait, and shift() on a large array copies it every time.
   */
  private compact(): void {
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  private schedule(ms: number): void {
    // Attempts in flight keep the process alive, not this timer. The sweep waits for this turn's I/O:
    // timers run before it, so after a stall (a long GC pause, a starved core) an answer that had already
    // arrived would be aborted as a timeout and the delivery made again.
    this.timer = setTimeout(() => {
      this.timer = null;
      // Not unref'd: an unref'd immediate lets the event loop block in its poll for I/O first.
      this.sweepSoon = setImmediate(() => this.sweep());
    }, ms).unref();
  }

  private sweep(): void {
    this.sweepSoon = null;
    const now = performance.now();
    while (this.head < this.queue.length && (this.queue[this.head]!.over || this.queue[this.head]!.deadline <= now)) {
      const attempt = this.queue[this.head++]!;
      if (attempt.over) continue;
      try {
        attempt.timeOut();
      } catch {
        // An abort that throws must not stop the sweep: later attempts still need their timeouts.
      }
    }
    this.compact();
    if (this.head < this.queue.length) {
      this.schedule(Math.max(1, this.queue[this.head]!.deadline - now));
    } else {
      this.queue = [];
      this.head = 0;
    }
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.sweepSoon) clearImmediate(this.sweepSoon);
    this.timer = null;
    this.sweepSoon = null;
  }
}

export class Sender {
  /** For public addresses only, and for anything but link-local ones (SendRequest.publicOnly). */
  private readonly publicOnly: Agent;
  private readonly local: Agent;
  private readonly deadlines: AttemptDeadlines;
  /**
   * Dispatchers made for what the two above do not cover: an endpoint's client certificate or CA bundle,
   * and the egress proxy; by route, address rule and TLS settings (a hash), oldest dropped first.
   */
  private readonly dispatchers = new Map<string, Dispatcher>();
  private readonly precheck: ProxyPrecheck;
  /** OAuth2 tokens of this process's endpoints (src/delivery/oauth-tokens.ts). */
  readonly tokens: OAuthTokens;

  constructor(private readonly options: SenderOptions) {
    this.publicOnly = this.directAgent(true, null);
    this.local = this.directAgent(false, null);
    this.deadlines = new AttemptDeadlines(options.attemptTimeoutMs);
    this.precheck = new ProxyPrecheck(options.ssrfAllow);
    this.tokens = new OAuthTokens((url, headers, body, publicOnly, deadline) =>
      this.post(url, headers, body, publicOnly, deadline),
    );
  }

  private directAgent(publicOnly: boolean, tls: ReceiverTls | null): Agent {
    const { options } = this;
    const connector = buildConnector({
      timeout: options.attemptTimeoutMs,
      lookup: guardedLookup(publicOnly, options.ssrfAllow),
      ...(tls ?? {}),
    });
    return new Agent({
      connections: options.connectionsPerOrigin,
      keepAliveTimeout: KEEP_ALIVE_MS,
      connect: guardedConnector(connector, publicOnly, options.ssrfAllow, options.attemptTimeoutMs),
    });
  }

  /** Whether a request to `url` leaves through the egress proxy. */
  private proxied(url: URL): boolean {
    return this.options.outboundProxy != null && !bypassesProxy(url.hostname, this.options.noProxy ?? []);
  }

  /** The dispatcher for a request: direct or through the proxy, under its address rule, with its TLS settings. */
  private dispatcherFor(proxied: boolean, publicOnly: boolean, tls: ReceiverTls | null | undefined): Dispatcher {
    if (!proxied && !tls) return publicOnly ? this.publicOnly : this.local;
    const tlsKey = tls
      ? createHash('sha256')
          .update(JSON.stringify([tls.cert, tls.key, tls.ca]))
          .digest('base64')
      : '';
    // Through the proxy the address rule was applied before (ProxyPrecheck): one dispatcher serves both.
    const key = proxied ? `proxy ${tlsKey}` : `${publicOnly ? 'public' : 'local'} ${tlsKey}`;
    let dispatcher = this.dispatchers.get(key);
    if (!dispatcher) {
      dispatcher = proxied
        ? proxyDispatcher(this.options.outboundProxy!, {
            connections: this.options.connectionsPerOrigin,
            keepAliveTimeout: KEEP_ALIVE_MS,
            tls: tls ?? null,
          })
        : this.directAgent(publicOnly, tls!);
      if (this.dispatchers.size >= DISPATCHERS_KEPT) {
        const [oldest, dropped] = this.dispatchers.entries().next().value!;
        this.dispatchers.delete(oldest);
        // Closing lets its requests in flight finish.
        dropped.close().catch(() => {});
      }
      this.dispatchers.set(key, dispatcher);
    }
    return dispatcher;
  }

  /** Makes the attempt; never rejects (a failure is a result). One bound for the whole attempt: connect, headers and body. */
  send(input: SendRequest): Promise<SendResult> {
    const started = performance.now();
    let url: URL;
    try {
      url = new URL(input.url);
    } catch (error) {
      return Promise.resolve(failure(error, started, this.options.attemptTimeoutMs));
    }
    const proxied = this.proxied(url);
    if (!proxied && !input.auth) {
      // Most attempts: one request on a shared deadline queue.
      const { attemptTimeoutMs, responseBodyLimit } = this.options;
      return new Promise((resolve) => {
        const attempt = new Attempt(started, attemptTimeoutMs, responseBodyLimit, resolve);
        this.deadlines.add(attempt);
        this.dispatch(this.dispatcherFor(false, input.publicOnly, input.tls), url, input, attempt);
      });
    }
    return this.sendPrepared(input, url, started);
  }

  /**
   * An attempt that needs steps before its request: the address check before the proxy, a bearer token
   * (and, on a 401, one new token and the request once more). All of it within the attempt's timeout.
   */
  private async sendPrepared(input: SendRequest, url: URL, started: number): Promise<SendResult> {
    const deadline = started + this.options.attemptTimeoutMs;
    try {
      if (!input.auth) return await this.exchange(input, url, started, this.options.responseBodyLimit);
      const { endpointId, client } = input.auth;
      let token = await this.tokens.token(endpointId, client, input.publicOnly, deadline);
      let result = await this.exchange(withBearer(input, token), url, started, this.options.responseBodyLimit);
      if (result.responseStatus === 401) {
        token = await this.tokens.token(endpointId, client, input.publicOnly, deadline, token);
        result = await this.exchange(withBearer(input, token), url, started, this.options.responseBodyLimit);
      }
      return result;
    } catch (error) {
      return failure(error, started, this.options.attemptTimeoutMs);
    }
  }

  /** One request of an attempt that began at `started`, on a timer of its own, ending at the attempt's deadline. */
  private async exchange(input: SendRequest, url: URL, started: number, limit: number): Promise<SendResult> {
    const timeoutMs = this.options.attemptTimeoutMs;
    const proxied = this.proxied(url);
    if (proxied) {
      const problem = await beforeDeadline(this.precheck.problem(url.hostname, input.publicOnly), started, timeoutMs);
      if (problem) throw new BlockedAddressError(problem);
    }
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const attempt = new Attempt(started, timeoutMs, limit, (result) => {
        clearTimeout(timer);
        resolve(result);
      });
      timer = setTimeout(() => attempt.timeOut(), Math.max(0, started + timeoutMs - performance.now()));
      this.dispatch(this.dispatcherFor(proxied, input.publicOnly, input.tls), url, input, attempt);
    });
  }

  private dispatch(dispatcher: Dispatcher, url: URL, input: SendRequest, attempt: Attempt): void {
    try {
      // An error in dispatch() itself comes back through the handler's onError.
      dispatcher.dispatch(
        {
          origin: url.origin,
          path: `${url.pathname}${url.search}`,
          method: (input.method ?? 'POST') as Dispatcher.HttpMethod,
          headers: input.headers,
          body: input.body,
        },
        attempt,
      );
    } catch (error) {
      attempt.onError(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /** A form posted to a token server, under the same address rules and route as the endpoint's requests. */
  private async post(
    url: string,
    headers: Record<string, string>,
    body: string,
    publicOnly: boolean,
    deadline: number,
  ): Promise<TokenAnswer> {
    const started = deadline - this.options.attemptTimeoutMs;
    const result = await this.exchange({ url, headers, body, publicOnly }, new URL(url), started, TOKEN_ANSWER_LIMIT);
    if (result.responseStatus === null) throw new Error(result.error ?? 'no answer');
    return { status: result.responseStatus, body: result.responseBody ?? '' };
  }

  async close(): Promise<void> {
    // The agents wait for the requests in flight, which keep their deadlines until then.
    await Promise.all([
      this.publicOnly.close(),
      this.local.close(),
      ...[...this.dispatchers.values()].map((d) => d.close()),
    ]);
    this.dispatchers.clear();
    this.deadlines.close();
  }
}

/** Idle connections to a receiver are closed after this long. */
const KEEP_ALIVE_MS = 4_000;
/** Dispatchers kept for client certificates and the proxy (each holds its own connections). */
const DISPATCHERS_KEPT = 256;
/** The most of a token server's answer read. */
const TOKEN_ANSWER_LIMIT = 16 * 1024;

/** The request with the token as its Authorization (replacing an endpoint header of that name). */
function withBearer(input: SendRequest, token: string): SendRequest {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(input.headers))
    if (name.toLowerCase() !== 'authorization') headers[name] = value;
  headers.authorization = `Bearer ${token}`;
  return { ...input, headers };
}

/** A step that fails as a timeout when the attempt's time runs out first. */
function beforeDeadline<T>(step: Promise<T>, started: number, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new AttemptTimeout(`attempt took longer than ${timeoutMs}ms`)),
      Math.max(0, started + timeoutMs - performance.now()),
    );
  });
  return Promise.race([step, late]).finally(() => clearTimeout(timer));
}

/** An attempt that failed before a request was made. */
function failure(error: unknown, started: number, timeoutMs: number): SendResult {
  return {
    ok: false,
    responseStatus: null,
    responseHeaders: null,
    responseBody: null,
    error: describe(error, timeoutMs),
    retryAfterMs: null,
    durationMs: Math.round(performance.now() - started),
  };
}
