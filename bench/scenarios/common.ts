import { join } from 'node:path';
import { request } from 'undici';
import { emitBody, emitPool, startHerald, type Herald, type HeraldOptions } from '../lib/herald.js';
import { openLoop, rawClosedLoop, rawOpenLoop, type LoadResult, type Target as LoadTarget } from '../lib/load.js';
import { benchFile, freePort, spawnNode, type Child } from '../lib/procs.js';
import { round, sleep, summarize } from '../lib/stats.js';
import type { Context } from '../lib/context.js';

export function heraldOptions(ctx: Context, options: Omit<HeraldOptions, 'logDir' | 'profileDir'>): HeraldOptions {
  return {
    ...options,
    logDir: ctx.logDir,
    ...(ctx.profileDir ? { profileDir: ctx.profileDir, sqlStatsDir: ctx.profileDir } : {}),
  };
}

/** Headers of an emit request with this API key. */
const emitHeaders = (key: string) => ({ 'content-type': 'application/json', authorization: `Bearer ${key}` });

export function emitTargets(urls: string[], key: string, connections: number): LoadTarget[] {
  return urls.map((url) => ({
    pool: emitPool(url, Math.max(1, Math.ceil(connections / urls.length))),
    path: '/api/v1/messages',
    headers: emitHeaders(key),
  }));
}

export async function closeTargets(targets: LoadTarget[]): Promise<void> {
  await Promise.all(targets.map((t) => t.pool.close().catch(() => {})));
}

/** One emit; resolves with the message's id (the webhook-id of its deliveries), rejects unless answered 201. */
export async function emitOne(target: LoadTarget, body: string): Promise<string> {
  const response = await target.pool.request({ method: 'POST', path: target.path, headers: target.headers, body });
  const text = await response.body.text();
  if (response.statusCode !== 201) throw new Error(`emit: ${response.statusCode} ${text.slice(0, 200)}`);
  return (JSON.parse(text) as { id: string }).id;
}

/** Sends exactly `count` emits, `concurrency` at a time; returns the message ids. */
export async function emitCount(
  targets: LoadTarget[],
  count: number,
  concurrency: number,
  bodyOf: (n: number) => string,
): Promise<string[]> {
  const ids: string[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      const target = targets[worker % targets.length]!;
      while (next < count) {
        const n = next++;
        ids[n] = await emitOne(target, bodyOf(n));
      }
    }),
  );
  return ids;
}

/** The run with the highest rate (scenarios that take turns with their baseline keep the better run of each). */
export function fastest<T extends { rate: number }>(runs: T[]): T {
  return runs.reduce((best, run) => (run.rate > best.rate ? run : best));
}

/** The bare fastify baseline (bench/baseline-ingest.ts) as a child process. */
export async function startBaseline(
  ctx: Context,
  name: string,
  store: 'sqlite' | 'postgres' | 'none',
  db: string,
  apps: number,
): Promise<{ child: Child; url: string }> {
  const port = await freePort();
  const child = spawnNode({
    name,
    script: benchFile('baseline-ingest.js'),
    env: { PORT: String(port), BASELINE_STORE: store, BASELINE_DB: db, BASELINE_APPS: String(apps) },
    logDir: ctx.logDir,
    ...(ctx.profileDir ? { nodeFlags: ['--cpu-prof', '--cpu-prof-dir', join(ctx.profileDir, name)] } : {}),
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  let exited = false;
  void child.exited.then(() => (exited = true));
  for (;;) {
    if (exited) throw new Error(`${name} exited during start; see ${child.logFile}`);
    if (Date.now() > deadline) throw new Error(`${name} did not start in 30 s`);
    const ok = await request(`${url}/healthz`).then(
      async (r) => (await r.body.dump(), r.statusCode === 200),
      () => false,
    );
    if (ok) return { child, url };
    await sleep(50);
  }
}

export interface ClosedFigures {
  rate: number;
  p50: number;
  p99: number;
  errors: number;
}

export function closedFigures(result: LoadResult): ClosedFigures {
  const latency = summarize(result.sent.map((s) => s.latencyMs));
  return {
    rate: round(result.sent.length / result.seconds, 0),
    p50: latency.p50,
    p99: latency.p99,
    errors: result.errors,
  };
}

/** Closed-loop emits at the scenario's concurrency against one or more API processes. */
export async function measureClosed(
  ctx: Context,
  urls: string[],
  key: string,
  appIds: string[],
): Promise<ClosedFigures> {
  const { ingestConcurrency, ingestSeconds, warmupSeconds } = ctx.sizes;
  const result = await rawClosedLoop(
    urls,
    '/api/v1/messages',
    emitHeaders(key),
    ingestConcurrency,
    ingestSeconds * 1000,
    warmupSeconds * 1000,
    (n) => emitBody(appIds[n % appIds.length]!, n),
  );
  return closedFigures(result);
}

export interface OpenFigures {
  offered: number;
  achieved: number;
  p50: number;
  p99: number;
  max: number;
  errors: number;
  maxSendLagMs: number;
}

export async function measureOpen(
  urls: string[],
  key: string,
  appIds: string[],
  rate: number,
  seconds: number,
  connections = 128,
): Promise<OpenFigures> {
  const result = await rawOpenLoop(urls, '/api/v1/messages', emitHeaders(key), connections, rate, seconds * 1000, (n) =>
    emitBody(appIds[n % appIds.length]!, n),
  );
  const latency = summarize(result.sent.map((s) => s.latencyMs));
  return {
    offered: round(rate, 0),
    achieved: round((result.sent.length + result.errors) / result.seconds, 0),
    p50: latency.p50,
    p99: latency.p99,
    max: latency.max,
    errors: result.errors,
    maxSendLagMs: round(result.maxSendLagMs ?? 0),
  };
}

export interface E2eFigures {
  offered: number;
  achieved: number;
  sent: number;
  delivered: number;
  emitP99: number;
  p50: number;
  p99: number;
  max: number;
  errors: number;
  /** Last arrival minus last send. */
  drainMs: number;
  sustained: number;
}

/**
 * Open-loop emits at `rate`/s for `seconds`, then waits for the receiver; latency is from the emit's send
 * time (bench clock) to the receiver's arrival time (receiver clock; same machine clock) per webhook-id.
 * `counted(n)` says which emits count (the slow-endpoint scenario leaves the slow endpoint's out).
 */
export async function measureEndToEnd(
  ctx: Context,
  urls: string[],
  key: string,
  appIds: string[],
  rate: number,
  seconds: number,
  counted: (appIndex: number) => boolean = () => true,
): Promise<E2eFigures> {
  const targets = emitTargets(urls, key, 128);
  let result: LoadResult;
  try {
    // Warm-up at the same rate, not measured (as in the ingest scenario): a process that has just started
    // runs its code unoptimized for its first seconds, and at 1,000/s the queue that builds meanwhile
    // would otherwise be most of the p99. Its deliveries arrive before measuring starts.
    await ctx.receiver.reset();
    const warmup = await openLoop(
      targets,
      rate,
      ctx.sizes.warmupSeconds * 1000,
      (n) => emitBody(appIds[n % appIds.length]!, -1 - n),
      true,
    );
    // Only accepted emits are delivered; a warm-up that falls short is reported by the measured run.
    const accepted = warmup.sent.filter((sent) =>
      counted(appIds.indexOf((JSON.parse(sent.body!) as { app_id: string }).app_id)),
    ).length;
    await ctx.receiver.waitFor(accepted, 30_000).catch(() => {});
    await ctx.receiver.reset();
    result = await openLoop(targets, rate, seconds * 1000, (n) => emitBody(appIds[n % appIds.length]!, n), true);
  } finally {
    await closeTargets(targets);
  }
  const sendTimes = new Map<string, number>();
  result.sent.forEach((sent) => {
    const body = JSON.parse(sent.body!) as { id: string; app_id: string };
    if (counted(appIds.indexOf(body.app_id))) sendTimes.set(body.id, sent.at);
  });
  const expectedTotal = sendTimes.size;
  // Wait (bounded) until every counted message has arrived.
  const deadline = Date.now() + 30_000;
  let arrived = new Map<string, number>();
  for (;;) {
    arrived = new Map();
    for (const [id, at] of await ctx.receiver.arrivals())
      if (sendTimes.has(id) && !arrived.has(id)) arrived.set(id, at);
    if (arrived.size >= expectedTotal || Date.now() > deadline) break;
    await sleep(200);
  }
  const latencies = [...arrived].map(([id, at]) => at - sendTimes.get(id)!);
  const latency = summarize(latencies);
  const achieved = round((result.sent.length + result.errors) / result.seconds, 0);
  const emitLatency = summarize(result.sent.map((s) => s.latencyMs));
  // Sustained: the rate was offered, every emit was accepted and delivered, and delivery kept pace (the
  // last arrival came within a second of the last send, so no backlog built up).
  const lastSend = Math.max(...result.sent.map((s) => s.at));
  const drainMs = round(Math.max(...arrived.values()) - lastSend, 0);
  const sustained =
    achieved >= rate * 0.95 && result.errors === 0 && arrived.size === expectedTotal && drainMs < 1000 ? 1 : 0;
  return {
    offered: rate,
    achieved,
    sent: result.sent.length + result.errors,
    delivered: arrived.size,
    emitP99: emitLatency.p99,
    p50: latency.p50,
    p99: latency.p99,
    max: latency.max,
    errors: result.errors,
    drainMs,
    sustained,
  };
}

export async function stopAll(...services: (Herald | { child: Child } | undefined)[]): Promise<number> {
  let peak = 0;
  for (const service of services) {
    if (!service) continue;
    peak = Math.max(peak, service.child.peakRss());
    await ('stop' in service ? service.stop() : service.child.stop());
  }
  return peak;
}

export { startHerald };

/**
 * A small transformation, as a receiver that wants its own shape would write one: a header added and the
 * payload renamed. `n` makes each endpoint's code its own (a compiled runtime each, as tenants' codes are).
 */
export function benchTransformation(n: number): string {
  return `function handler(webhook) {
  webhook.headers["x-shape"] = "bench-${n}";
  webhook.payload = { kind: webhook.eventType, at: webhook.payload.timestamp, body: webhook.payload.data };
  return webhook;
}`;
}
