import { emitBody, setupOrg, type Herald } from '../lib/herald.js';
import { paced } from '../lib/load.js';
import { createDatabase } from '../lib/pg.js';
import { removeTempDir, tempDir } from '../lib/procs.js';
import type { Arrival } from '../lib/receiver.js';
import { nowMs, round, sleep, summarize } from '../lib/stats.js';
import { mb, target, type Context, type ScenarioResult } from '../lib/context.js';
import { bullmqProducer, bullmqWorkerOptions, redisAvailable, REDIS_URL } from '../peers/bullmq.js';
import { graphileOptions, graphileProducer } from '../peers/graphile.js';
import { peerJob, type JobProducer } from '../peers/job.js';
import { startPeer, type Peer } from '../peers/process.js';
import { closeTargets, emitOne, emitTargets, heraldOptions, startHerald, stopAll } from './common.js';

// Issue 43, item 5: a slow neighbour beside the peers, where design decides rather than CPU. Twenty
// endpoints on the receiver; one answers after 5 s (BENCH_SLOW_MS) and gets every fifth message, the other
// nineteen get the rest in turn. Messages are emitted open loop, and each contender holds the same 64
// requests in flight in its one worker process, configured as its own documentation advises:
//
// - Herald: HERALD_CONCURRENCY=64 (the worker's requests in flight) and HERALD_ENDPOINT_CONCURRENCY=16 (its
//   default: the most one endpoint may hold of them); on PostgreSQL an API process and one worker process,
//   on SQLite one process that does both (role all), as docs/deployment.md advises for each store.
// - BullMQ: one Worker, `concurrency: 64`, the `peers` scenario's options (bullmqWorkerOptions).
// - graphile-worker: one runner, `concurrency: 64`, the `peers` scenario's options (graphileOptions: a pool
//   of 65, the local queue of its performance page).
//
// A peer's jobs are added one by one as they are emitted (Queue.add, WorkerUtils.addJob), each carrying its
// endpoint's URL, as an application delivering webhooks from its job queue adds them. Each message carries
// its emit time (its scheduled send time) in its payload as `emitted_at`, and the receiver reads it from the
// body: latency is arrival minus emit, per message. A message that has not arrived when the run is cut
// counts with its wait so far, so a contender that fell behind reads a p50 and p99 no higher than its real
// ones. The figures are for the 19 fast endpoints, then for the slow one; the target is Herald's fast p99
// at most 0.1x the better peer's.

/** Requests in flight per worker process, for every contender. */
const IN_FLIGHT = 64;
/** One endpoint's share of a Herald worker's requests in flight: Herald's default. */
const HERALD_ENDPOINT_CONCURRENCY = 16;
const ENDPOINTS = 20;
/** Every fifth message goes to the slow endpoint (endpoint 0): 20% of the traffic. */
const SLOW_EVERY = 5;
const FAST_PATH = '/neighbour/';
/** The warm-up's messages are numbered from here, apart from the measured ones. */
const WARMUP_FROM = 10_000_000;
/** How long the warm-up's messages are waited for before measuring. */
const WARMUP_ARRIVALS_MS = 10_000;
/** How long emits still unanswered after the last send are waited for; later ones count as errors. */
const EMIT_ANSWER_MS = 10_000;
const TARGET_RATIO = 0.1;

/** The slow endpoint is endpoint 0, under /slow/ where the receiver answers late. */
const endpointUrl = (ctx: Context, endpoint: number) =>
  endpoint === 0 ? `${ctx.receiver.url}/slow/neighbour` : `${ctx.receiver.url}${FAST_PATH}${endpoint}`;

/** Message n's endpoint: every fifth to the slow one, the others in turn over the fast ones. */
const endpointOf = (n: number) =>
  n % SLOW_EVERY === 0 ? 0 : 1 + ((n - Math.floor(n / SLOW_EVERY) - 1) % (ENDPOINTS - 1));

/** The warm-up's message k: the fast endpoints only, in turn. */
const fastEndpointOf = (k: number) => 1 + (k % (ENDPOINTS - 1));

/** A contender as the scenario drives it: messages in, then everything it started stopped. */
interface Contender {
  name: string;
  /** Hands message n for the endpoint to the contender; resolves with the webhook-id its request will carry. */
  emit(n: number, endpoint: number, emittedAt: number): Promise<string>;
  /** Stops its processes and removes its data; the exit code of each process (null: it had to be killed). */
  stop(): Promise<{ peak: number; exits: (number | null)[] }>;
}

async function heraldContender(ctx: Context, store: 'postgres' | 'sqlite'): Promise<Contender> {
  const name = `herald-${store}`;
  const database = store === 'postgres' ? await createDatabase('slowneighbour') : undefined;
  const db = database ? { databaseUrl: database.url } : {};
  const dataDir = tempDir('herald-bench-slow-neighbour-');
  const env = {
    HERALD_CONCURRENCY: String(IN_FLIGHT),
    HERALD_ENDPOINT_CONCURRENCY: String(HERALD_ENDPOINT_CONCURRENCY),
  };
  const services: Herald[] = [];
  const stop = async () => {
    const peak = await stopAll(...services);
    const exits = await Promise.all(services.map((s) => s.child.exited));
    await database?.drop();
    removeTempDir(dataDir);
    return { peak, exits };
  };
  try {
    // As docs/deployment.md advises: on SQLite one process (role all), on PostgreSQL an API and a worker.
    const role = database ? 'api' : 'all';
    const api = await startHerald(heraldOptions(ctx, { name: `${name}-${role}`, role, dataDir, env, ...db }));
    services.push(api);
    const setup = await setupOrg(api.url!, ENDPOINTS, 1, (app) => endpointUrl(ctx, app));
    if (database)
      services.push(
        await startHerald(heraldOptions(ctx, { name: `${name}-worker`, role: 'worker', dataDir, env, ...db })),
      );
    const [emits] = emitTargets([api.url!], setup.key, 32);
    return {
      name,
      emit: (n, endpoint, emittedAt) =>
        emitOne(emits!, emitBody(setup.appIds[endpoint]!, n, { emitted_at: emittedAt })),
      async stop() {
        await closeTargets([emits!]);
        return stop();
      },
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function peerContender(ctx: Context, peer: Peer): Promise<Contender> {
  const worker = await startPeer(ctx, peer, { concurrency: IN_FLIGHT, url: ctx.receiver.url });
  let producer: JobProducer | undefined;
  try {
    producer = peer === 'bullmq' ? bullmqProducer(worker.queue) : await graphileProducer(worker.queue);
    await worker.ask('start', 30_000);
  } catch (error) {
    await producer?.close().catch(() => {});
    await worker.close();
    throw error;
  }
  const jobs = producer;
  return {
    name: peer,
    async emit(n, endpoint, emittedAt) {
      const job = { ...peerJob(n, emittedAt, { emitted_at: emittedAt }), url: endpointUrl(ctx, endpoint) };
      await jobs.add(job);
      return job.id;
    },
    async stop() {
      await jobs.close().catch(() => {});
      // `finish` stops the worker, which waits for its jobs in flight, and the process then exits.
      await worker.ask('finish', 10_000).catch(() => {});
      const exit = await Promise.race([worker.child.exited, sleep(10_000).then(() => null)]);
      const peak = worker.child.peakRss();
      await worker.close();
      return { peak, exits: [exit] };
    },
  };
}

interface Emitted {
  /** Its emit time (wall clock, ms), as its payload carries it. */
  at: number;
  slow: boolean;
}

interface Emission {
  /** The accepted messages by webhook-id. */
  accepted: Map<string, Emitted>;
  errors: number;
  /** When the last emit left (`performance.now()`). */
  lastSend: number;
  maxSendLagMs: number;
  /** From an emit's scheduled time to its answer (the API's 201, or the queue's add). */
  answerP99Ms: number;
}

/**
 * Emits message from + k for k = 0, 1, … open loop at `rate` per second for `durationMs` to `endpointOf(k)`;
 * each carries its scheduled send time. Resolves once every emit has answered, or EMIT_ANSWER_MS after the
 * last one left (the ones still unanswered count as errors).
 */
async function emitOpenLoop(
  contender: Contender,
  rate: number,
  durationMs: number,
  endpointOf: (k: number) => number,
  from = 0,
): Promise<Emission> {
  const accepted = new Map<string, Emitted>();
  const answerMs: number[] = [];
  let open = true;
  const pending: Promise<void>[] = [];
  const { maxSendLagMs } = await paced(rate, durationMs, (k, scheduled) => {
    const endpoint = endpointOf(k);
    const at = performance.timeOrigin + scheduled;
    pending.push(
      contender.emit(from + k, endpoint, at).then(
        (id) => {
          if (!open) return;
          answerMs.push(performance.now() - scheduled);
          accepted.set(id, { at, slow: endpoint === 0 });
        },
        () => {},
      ),
    );
  });
  const lastSend = performance.now();
  await Promise.race([Promise.all(pending), sleep(EMIT_ANSWER_MS)]);
  open = false;
  return {
    accepted,
    errors: pending.length - accepted.size,
    lastSend,
    maxSendLagMs,
    answerP99Ms: summarize(answerMs).p99,
  };
}

/** Waits until `count` requests have reached the fast endpoints, or until `deadline` (`performance.now()`). */
async function fastArrivals(ctx: Context, count: number, deadline: number): Promise<void> {
  while (performance.now() < deadline && (await ctx.receiver.count(FAST_PATH)) < count) await sleep(100);
}

interface ClassFigures {
  p50: number;
  p99: number;
  /** Accepted messages that had not arrived at the cut-off. */
  notArrived: number;
  count: number;
}

/** Emit-to-arrival latency of the accepted messages, the fast endpoints' apart from the slow one's. */
function latencies(accepted: Map<string, Emitted>, arrivals: Arrival[], cutoff: number) {
  const first = new Map<string, Arrival>();
  for (const arrival of arrivals) if (!first.has(arrival[0])) first.set(arrival[0], arrival);
  const of = (slow: boolean): ClassFigures => {
    const values: number[] = [];
    let notArrived = 0;
    for (const [id, emitted] of accepted) {
      if (emitted.slow !== slow) continue;
      const arrival = first.get(id);
      if (!arrival) {
        notArrived++;
        values.push(cutoff - emitted.at);
      } else if (arrival[3] === undefined) {
        throw new Error(`message ${id} arrived without its emitted_at`);
      } else values.push(arrival[1] - arrival[3]);
    }
    const { p50, p99 } = summarize(values);
    return { p50, p99, notArrived, count: values.length };
  };
  return { fast: of(false), slow: of(true) };
}

interface Run {
  name: string;
  fast: ClassFigures;
  slow: ClassFigures;
  emission: Emission;
  peak: number;
  exits: (number | null)[];
}

/**
 * One contender's run: a warm-up at the same rate to the fast endpoints only (not measured: a fresh process
 * runs its code unoptimized for its first seconds), then the measured emits, a bounded wait for the fast
 * endpoints' messages, the cut-off, and the contender stopped with the slow answers still waiting cut off.
 */
async function measure(ctx: Context, start: () => Promise<Contender>): Promise<Run> {
  const { slowNeighbourRate: rate, slowNeighbourSeconds: seconds, slowNeighbourWaitSeconds: wait } = ctx.sizes;
  await ctx.receiver.reset();
  const contender = await start();
  let measured: Omit<Run, 'peak' | 'exits'> | undefined;
  let stopped: { peak: number; exits: (number | null)[] };
  try {
    const warmup = await emitOpenLoop(contender, rate, ctx.sizes.warmupSeconds * 1000, fastEndpointOf, WARMUP_FROM);
    await fastArrivals(ctx, warmup.accepted.size, performance.now() + WARMUP_ARRIVALS_MS);
    await ctx.receiver.reset();
    ctx.log(`  ${contender.name}: ${rate}/s for ${seconds}s`);
    const emission = await emitOpenLoop(contender, rate, seconds * 1000, endpointOf);
    const fastAccepted = [...emission.accepted.values()].filter((e) => !e.slow).length;
    // The same cut-off for every contender: `wait` seconds after its last emit left (unless its emits
    // were answered later still), or sooner once every fast message has arrived.
    await fastArrivals(ctx, fastAccepted, emission.lastSend + wait * 1000);
    const cutoff = nowMs();
    measured = {
      name: contender.name,
      emission,
      ...latencies(emission.accepted, await ctx.receiver.arrivals(), cutoff),
    };
  } finally {
    await ctx.receiver.cutSlow().catch(() => {});
    stopped = await contender.stop();
  }
  return { ...measured!, ...stopped };
}

function figuresOf(prefix: string, run: Run): Record<string, number> {
  return {
    [`${prefix}FastP50Ms`]: round(run.fast.p50, 1),
    [`${prefix}FastP99Ms`]: round(run.fast.p99, 1),
    [`${prefix}FastNotArrived`]: run.fast.notArrived,
    [`${prefix}SlowP50Ms`]: round(run.slow.p50, 0),
    [`${prefix}SlowP99Ms`]: round(run.slow.p99, 0),
    [`${prefix}SlowArrived`]: run.slow.count - run.slow.notArrived,
    [`${prefix}Accepted`]: run.emission.accepted.size,
    [`${prefix}EmitErrors`]: run.emission.errors,
    [`${prefix}EmitAnswerP99Ms`]: round(run.emission.answerP99Ms, 1),
  };
}

export async function slowNeighbour(ctx: Context): Promise<ScenarioResult> {
  if (!(await redisAvailable())) throw new Error(`Redis is not reachable on ${REDIS_URL}`);
  const { slowNeighbourRate: rate, slowNeighbourSeconds: seconds, slowNeighbourWaitSeconds: wait } = ctx.sizes;
  ctx.log('  Herald, PostgreSQL, API + 1 worker');
  const pg = await measure(ctx, () => heraldContender(ctx, 'postgres'));
  ctx.log('  BullMQ');
  const bullmq = await measure(ctx, () => peerContender(ctx, 'bullmq'));
  ctx.log('  Herald, SQLite, 1 process (role all)');
  const sqlite = await measure(ctx, () => heraldContender(ctx, 'sqlite'));
  ctx.log('  graphile-worker');
  const graphile = await measure(ctx, () => peerContender(ctx, 'graphile-worker'));

  const betterPeerP99 = Math.min(bullmq.fast.p99, graphile.fast.p99);
  const ratios = {
    pgFastP99VsBetterPeer: round(pg.fast.p99 / betterPeerP99, 4),
    sqliteFastP99VsBetterPeer: round(sqlite.fast.p99 / betterPeerP99, 4),
  };
  const runs = [pg, bullmq, sqlite, graphile];
  const unclean = runs.filter((r) => r.exits.some((code) => code !== 0));
  const slowMs = Number(process.env.BENCH_SLOW_MS ?? 5000);
  const graphileConfig = graphileOptions('', IN_FLIGHT);
  const bullmqConfig = bullmqWorkerOptions(IN_FLIGHT);
  return {
    name: 'slow-neighbour',
    title: `Slow neighbour: 20 endpoints, one answering in ${slowMs / 1000} s with 20% of ${rate}/s; Herald beside BullMQ and graphile-worker, ${IN_FLIGHT} in flight each`,
    store: 'postgres',
    figures: { offeredPerSec: rate, seconds, ...figuresOf('pg', pg), ...figuresOf('sqlite', sqlite) },
    baseline: { ...figuresOf('bullmq', bullmq), ...figuresOf('graphileWorker', graphile) },
    ratios,
    peakRssMb: mb(Math.max(pg.peak, sqlite.peak)),
    targets: [
      target(
        'slow neighbour: Herald PostgreSQL fast-endpoint p99 vs the better peer',
        `<= ${TARGET_RATIO}x`,
        ratios.pgFastP99VsBetterPeer,
        ratios.pgFastP99VsBetterPeer <= TARGET_RATIO,
      ),
      target(
        'slow neighbour: Herald SQLite fast-endpoint p99 vs the better peer',
        `<= ${TARGET_RATIO}x`,
        ratios.sqliteFastP99VsBetterPeer,
        ratios.sqliteFastP99VsBetterPeer <= TARGET_RATIO,
      ),
    ],
    notes: [
      `${rate} messages/s open loop for ${seconds}s, after ${ctx.sizes.warmupSeconds}s of warm-up at that rate to the fast endpoints only; every fifth message to the endpoint that answers in ${slowMs} ms, the rest in turn over 19 fast ones; latency = arrival at the receiver - emitted_at in the payload (the emit's scheduled send time)`,
      `cut-off: when every fast message has arrived, or ${wait}s after the last emit left; a message not arrived by then counts at its wait so far, so a p50 or p99 beside *NotArrived > 0 is a floor`,
      `in flight per worker process: Herald HERALD_CONCURRENCY=${IN_FLIGHT}, HERALD_ENDPOINT_CONCURRENCY=${HERALD_ENDPOINT_CONCURRENCY} (PostgreSQL: an API process and one worker; SQLite: one process, role all); BullMQ one Worker, concurrency ${bullmqConfig.concurrency}; graphile-worker concurrency ${graphileConfig.concurrency}, maxPoolSize ${graphileConfig.maxPoolSize}, localQueue ${graphileConfig.preset.worker.localQueue.size}; the peers' jobs added as emitted (Queue.add, WorkerUtils.addJob), each with its endpoint's URL`,
      `emits' largest send lag: ${runs.map((r) => `${r.name} ${round(r.emission.maxSendLagMs, 1)} ms`).join(', ')}`,
      unclean.length === 0
        ? 'stopping: the slow answers still waiting were cut off, and every process exited by itself'
        : `stopping: ${unclean.map((r) => `${r.name} exit codes ${r.exits.join('/')}`).join('; ')} (null: killed after its grace)`,
    ],
    seconds: 0,
  };
}
