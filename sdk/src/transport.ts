import { HeraldError } from './error.js';

// HTTP to Herald over `fetch` (Node >= 20, edge runtimes): JSON in and out, the error envelope turned
// into HeraldError, and retries where sending a request again cannot do anything twice.

/**
 * Which failures a request may be sent again after:
 * - `safe`: a 429, a 5xx, a network error or a timeout. For reads, and for an emit, which carries an
 *   Idempotency-Key: a second try of a message the server did store returns that message.
 * - `rate_limited`: a 429 only. The server answers it before the route runs, so nothing was done; any
 *   other failure of a write may have happened after the write, and sending it again could repeat it.
 */
export type RetryPolicy = 'safe' | 'rate_limited';

export interface TransportOptions {
  /** `sk_test_…` or `sk_live_…`; null for the routes that need no key. */
  apiKey: string | null;
  /** Where the service listens. Default `http://127.0.0.1:8080`. */
  baseUrl?: string;
  /** Most retries of one request (so at most maxRetries + 1 tries). Default 3. */
  maxRetries?: number;
  /** Wait before the first retry; each next one waits twice as long, up to maxRetryDelayMs. Default 500. */
  retryDelayMs?: number;
  /** Longest wait between tries, Retry-After included. Default 30,000. */
  maxRetryDelayMs?: number;
  /** A try with no answer after this long is abandoned (and retried when its policy allows). Default 30,000. */
  timeoutMs?: number;
  /** The fetch to use. Default the global one. */
  fetch?: typeof fetch;
}

export interface Call {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  query?: object;
  body?: object;
  headers?: Record<string, string>;
  retry: RetryPolicy;
}

/** A try that got no answer: the network failed, or it timed out. */
class NoAnswer {
  constructor(readonly error: unknown) {}
}

export class Transport {
  readonly baseUrl: string;
  private readonly apiKey: string | null;
  private readonly maxRetries: number;
  private readonly retryDelayMs: number;
  private readonly maxRetryDelayMs: number;
  private readonly timeoutMs: number;
  private readonly fetch: typeof fetch;

  constructor(options: TransportOptions) {
    this.apiKey = options.apiKey;
    this.baseUrl = (options.baseUrl ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
    this.maxRetries = options.maxRetries ?? 3;
    this.retryDelayMs = options.retryDelayMs ?? 500;
    this.maxRetryDelayMs = options.maxRetryDelayMs ?? 30_000;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  /** Sends the call, retrying as its policy allows; resolves to the answer's JSON (undefined for 204). */
  async request<T>(call: Call): Promise<T> {
    const url = this.urlOf(call);
    const headers: Record<string, string> = { accept: 'application/json', ...call.headers };
    if (this.apiKey !== null) headers['authorization'] = `Bearer ${this.apiKey}`;
    if (call.body !== undefined) headers['content-type'] = 'application/json';
    const body = call.body === undefined ? undefined : JSON.stringify(call.body);
    for (let retry = 0; ; retry++) {
      const answer = await this.tryOnce(url, { method: call.method, headers, body });
      const lastTry = retry >= this.maxRetries;
      if (answer instanceof NoAnswer) {
        if (lastTry || call.retry !== 'safe') throw this.noAnswerError(answer.error);
        await sleep(this.backoff(retry));
        continue;
      }
      if (answer.ok) return (await readJson(answer)) as T;
      const again = answer.status === 429 || (call.retry === 'safe' && answer.status >= 500);
      if (lastTry || !again) throw await errorOf(answer);
      // The body is not needed: read it so the connection can be reused.
      await answer.arrayBuffer().catch(() => undefined);
      await sleep(this.retryAfter(answer) ?? this.backoff(retry));
    }
  }

  private urlOf(call: Call): string {
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(call.query ?? {})) {
      if (value !== undefined && value !== null) search.set(name, String(value));
    }
    const query = search.toString();
    return `${this.baseUrl}${call.path}${query ? `?${query}` : ''}`;
  }

  private async tryOnce(url: string, init: RequestInit): Promise<Response | NoAnswer> {
    try {
      return await this.fetch(url, { ...init, signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (error) {
      return new NoAnswer(error);
    }
  }

  private noAnswerError(error: unknown): HeraldError {
    const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
    return timedOut
      ? new HeraldError(0, 'timeout', `No answer from ${this.baseUrl} within ${this.timeoutMs} ms`, null, {
          cause: error,
        })
      : new HeraldError(
          0,
          'connection_error',
          `Could not reach ${this.baseUrl}: ${error instanceof Error ? error.message : String(error)}`,
          null,
          { cause: error },
        );
  }

  /** Exponential, with jitter (between half and all of the step) so clients that failed together spread out. */
  private backoff(retry: number): number {
    const step = Math.min(this.maxRetryDelayMs, this.retryDelayMs * 2 ** retry);
    return step / 2 + Math.random() * (step / 2);
  }

  /** The wait a 429 or 503 asks for with Retry-After (seconds or an HTTP date), capped; null without one. */
  private retryAfter(response: Response): number | null {
    const value = response.headers.get('retry-after');
    if (value === null || value.trim() === '') return null;
    const seconds = Number(value);
    const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(value) - Date.now();
    if (Number.isNaN(ms)) return null;
    return Math.min(this.maxRetryDelayMs, Math.max(0, ms));
  }
}

async function readJson(response: Response): Promise<unknown> {
  const text = await response.text();
  return text === '' ? undefined : JSON.parse(text);
}

/** The HeraldError of a failed answer: its error envelope, or what the status says when it has none (a proxy's page). */
async function errorOf(response: Response): Promise<HeraldError> {
  const headerId = response.headers.get('x-request-id');
  const text = await response.text().catch(() => '');
  try {
    const envelope = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; request_id?: unknown } };
    const error = envelope.error;
    if (error && typeof error.code === 'string' && typeof error.message === 'string') {
      const requestId = typeof error.request_id === 'string' ? error.request_id : headerId;
      return new HeraldError(response.status, error.code, error.message, requestId);
    }
  } catch {
    // not JSON: described by its status below
  }
  const reason = response.statusText ? ` ${response.statusText}` : '';
  return new HeraldError(response.status, 'http_error', `HTTP ${response.status}${reason}`, headerId);
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
