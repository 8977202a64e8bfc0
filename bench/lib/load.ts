import { connect, type Socket } from 'node:net';
import type { Dispatcher, Pool } from 'undici';
import { nowMs, sleep } from './stats.js';

// Load generators. Closed loop: `concurrency` callers each send, wait for the answer, send again, for a
// fixed time. Open loop: requests leave on a schedule (rate per second) whatever the answers do, so slow
// answers cannot slow the sending down and hide latency (no coordinated omission).

export interface Target {
  pool: Pool;
  path: string;
  headers: Record<string, string>;
}

export interface Sent {
  /** Wall-clock send time (ms, sub-ms precision). */
  at: number;
  latencyMs: number;
  status: number;
  /** Response body, when `keepBodies` was asked for. */
  body?: string;
}

export interface LoadResult {
  sent: Sent[];
  errors: number;
  /** Seconds between the start and the end of measurement. */
  seconds: number;
  /** Open loop: the largest delay between a request's scheduled time and its actual send. */
  maxSendLagMs?: number;
}

/**
 * The open loop's clock: calls `fire(n, scheduled)` for n = 0, 1, … at `rate` per second for `durationMs`,
 * each at its scheduled time (`performance.now()` units) whatever earlier calls are doing, and resolves once
 * the last has been fired with the seconds taken and the largest delay of a call past its scheduled time.
 */
export async function paced(
  rate: number,
  durationMs: number,
  fire: (n: number, scheduled: number) => void,
): Promise<{ seconds: number; maxSendLagMs: number }> {
  const start = performance.now();
  const total = Math.round((rate * durationMs) / 1000);
  let maxSendLagMs = 0;
  let n = 0;
  while (n < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) * rate) / 1000) + 1);
    while (n < due) {
      const scheduled = start + (n * 1000) / rate;
      maxSendLagMs = Math.max(maxSendLagMs, performance.now() - scheduled);
      fire(n++, scheduled);
    }
    // Sleep until the next call is due (timers have ~1 ms resolution; the loop above catches up).
    await sleep(Math.max(0, start + (n * 1000) / rate - performance.now() - 0.5));
  }
  return { seconds: (performance.now() - start) / 1000, maxSendLagMs };
}

async function one(target: Target, body: string, keepBody: boolean): Promise<Sent> {
  const at = nowMs();
  const started = performance.now();
  try {
    const response = await target.pool.request({
      method: 'POST',
      path: target.path,
      headers: target.headers,
      body,
    } as Dispatcher.RequestOptions);
    const text = keepBody ? await response.body.text() : (await response.body.dump(), undefined);
    return {
      at,
      latencyMs: performance.now() - started,
      status: response.statusCode,
      ...(text !== undefined ? { body: text } : {}),
    };
  } catch {
    return { at, latencyMs: performance.now() - started, status: 0 };
  }
}

/** Open loop: `rate` requests per second for `durationMs`, then waits (bounded) for the answers. */
export async function openLoop(
  targets: Target[],
  rate: number,
  durationMs: number,
  bodyOf: (n: number) => string,
  keepBodies = false,
): Promise<LoadResult> {
  const pending: Promise<Sent>[] = [];
  const { seconds, maxSendLagMs } = await paced(rate, durationMs, (n) =>
    pending.push(one(targets[n % targets.length]!, bodyOf(n), keepBodies)),
  );
  // Answers still missing 30 s after the last send count as errors (the service fell behind).
  const settled: (Sent | undefined)[] = new Array(pending.length);
  pending.forEach((p, i) => void p.then((r) => (settled[i] = r)));
  await Promise.race([Promise.all(pending), sleep(30_000)]);
  const results = settled.filter((r): r is Sent => r !== undefined);
  const ok = results.filter((r) => r.status >= 200 && r.status < 300);
  return { sent: ok, errors: pending.length - ok.length, seconds, maxSendLagMs };
}

const headerLines = (headers: Record<string, string>) =>
  Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');

const postRequest = (url: URL, path: string, head: string, body: string) =>
  `POST ${path} HTTP/1.1\r\nhost: ${url.host}\r\n${head}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

/** Calls `onAnswer(status)` for each complete HTTP/1.1 answer on `socket` (answers must carry content-length). */
function onAnswers(socket: Socket, onAnswer: (status: number) => void): void {
  let buffer = '';
  socket.on('data', (chunk) => {
    buffer += chunk.toString('latin1');
    for (;;) {
      const headEnd = buffer.indexOf('\r\n\r\n');
      if (headEnd < 0) return;
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(buffer.slice(0, headEnd))?.[1] ?? 0);
      if (buffer.length < headEnd + 4 + length) return;
      const status = Number(buffer.slice(9, 12));
      buffer = buffer.slice(headEnd + 4 + length);
      onAnswer(status);
    }
  });
}

/**
 * Closed loop for `warmupMs + durationMs` (only requests sent after the warm-up count): `concurrency`
 * callers each send, wait for the answer, send again. Over plain keep-alive sockets instead of undici:
 * each caller owns one connection, writes a complete HTTP/1.1 request and reads the answer by its
 * content-length. On this 2-core machine the generator shares the CPU with the service it measures;
 * undici spent ~60% of a core at 3,000 requests/s, this ~30%, so more of the machine goes to the service
 * (and to the baseline, which is measured with the same generator). Answers must carry content-length
 * (fastify's do).
 */
export async function rawClosedLoop(
  urls: string[],
  path: string,
  headers: Record<string, string>,
  concurrency: number,
  durationMs: number,
  warmupMs: number,
  bodyOf: (n: number) => string,
): Promise<LoadResult> {
  const start = performance.now();
  const measureFrom = start + warmupMs;
  const end = measureFrom + durationMs;
  const sent: Sent[] = [];
  let errors = 0;
  let n = 0;
  const head = headerLines(headers);

  const caller = (url: URL) =>
    new Promise<void>((resolve) => {
      const socket = connect(Number(url.port), url.hostname);
      socket.setNoDelay(true);
      let sentAt = 0;
      let at = 0;
      const next = () => {
        if (performance.now() >= end) return void socket.end(resolve);
        sentAt = performance.now();
        at = nowMs();
        socket.write(postRequest(url, path, head, bodyOf(n++)));
      };
      socket.on('connect', next);
      socket.on('error', () => {
        errors++;
        resolve();
      });
      onAnswers(socket, (status) => {
        const done = performance.now();
        if (sentAt >= measureFrom && done <= end) {
          if (status >= 200 && status < 300) sent.push({ at, latencyMs: done - sentAt, status });
          else errors++;
        }
        next();
      });
    });

  await Promise.all(Array.from({ length: concurrency }, (_, i) => caller(new URL(urls[i % urls.length]!))));
  return { sent, errors, seconds: durationMs / 1000 };
}

/**
 * Open loop like `openLoop`, over `connections` plain keep-alive sockets (see `rawClosedLoop` for why):
 * a request leaves at its scheduled time on an idle connection, or waits in line for the first one to
 * free up; its latency counts from the scheduled time, so waiting in line is part of it.
 */
export async function rawOpenLoop(
  urls: string[],
  path: string,
  headers: Record<string, string>,
  connections: number,
  rate: number,
  durationMs: number,
  bodyOf: (n: number) => string,
): Promise<LoadResult> {
  const head = headerLines(headers);
  const total = Math.round((rate * durationMs) / 1000);
  const sent: Sent[] = [];
  let errors = 0;
  let answered = 0;
  const waiting: { n: number; scheduled: number; at: number }[] = [];
  const idle: ((job: { n: number; scheduled: number; at: number }) => void)[] = [];
  let allAnswered!: () => void;
  const finished = new Promise<void>((resolve) => (allAnswered = resolve));
  const settle = () => {
    if (++answered === total) allAnswered();
  };

  const sockets = Array.from({ length: connections }, (_, i) => {
    const url = new URL(urls[i % urls.length]!);
    const socket = connect(Number(url.port), url.hostname);
    socket.setNoDelay(true);
    let current: { n: number; scheduled: number; at: number } | null = null;
    const run = (job: { n: number; scheduled: number; at: number }) => {
      current = job;
      socket.write(postRequest(url, path, head, bodyOf(job.n)));
    };
    const free = () => {
      const next = waiting.shift();
      if (next) run(next);
      else idle.push(run);
    };
    socket.on('connect', free);
    socket.on('error', () => {
      if (current) errors++, settle(), (current = null);
    });
    onAnswers(socket, (status) => {
      if (!current) return;
      if (status >= 200 && status < 300)
        sent.push({ at: current.at, latencyMs: performance.now() - current.scheduled, status });
      else errors++;
      current = null;
      settle();
      free();
    });
    return socket;
  });
  await Promise.all(sockets.map((s) => new Promise((resolve) => s.once('connect', resolve))));

  const { seconds, maxSendLagMs } = await paced(rate, durationMs, (n, scheduled) => {
    const job = { n, scheduled, at: nowMs() };
    const connection = idle.pop();
    if (connection) connection(job);
    else waiting.push(job);
  });
  // Answers still missing 30 s after the last send count as errors (the service fell behind).
  await Promise.race([finished, sleep(30_000)]);
  errors += total - answered;
  for (const socket of sockets) socket.destroy();
  return { sent, errors, seconds, maxSendLagMs };
}
