import { spawn } from 'node:child_process';
import { request } from 'undici';
import { freePort, memoryOf, REPO, tempDir } from '../lib/procs.js';
import { nowMs, round, sleep, summarize } from '../lib/stats.js';
import { target, type Context, type ScenarioResult } from '../lib/context.js';
import { startBaseline } from './common.js';

// What an operator sees first: `npm start` (the built service, embedded store, role all) from the command
// to GET /healthz answering 200, and the service process's resident memory once it has been idle for a
// few seconds. The baseline is the bare fastify server (bench/baseline-ingest.ts, no store) started the
// same way: the floor of a Node.js HTTP process on this machine.

const IDLE_MS = 5_000;
const READY_LIMIT_MS = 30_000;

async function healthy(url: string): Promise<boolean> {
  return request(`${url}/healthz`).then(
    async (r) => (await r.body.dump(), r.statusCode === 200),
    () => false,
  );
}

/** One `npm start`: milliseconds to /healthz 200, and the service's RSS after IDLE_MS. */
async function npmStart(): Promise<{ readyMs: number; rss: number }> {
  const port = await freePort();
  const began = nowMs();
  const npm = spawn('npm', ['start'], {
    cwd: REPO,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: String(port),
      HERALD_DATA_DIR: tempDir('herald-bench-startup-'),
      HERALD_SECRET_KEY: 'bench-secret-key-that-is-long-enough-0123456789',
      HERALD_LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  npm.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  try {
    while (!(await healthy(`http://127.0.0.1:${port}`))) {
      if (nowMs() - began > READY_LIMIT_MS) throw new Error(`npm start was not ready in ${READY_LIMIT_MS} ms`);
      await sleep(10);
    }
    const readyMs = nowMs() - began;
    await sleep(IDLE_MS);
    // `npm start` execs node: the service is npm's child, and names its pid on its log lines.
    const pid = Number(/"pid":(\d+)/.exec(output)?.[1]);
    return { readyMs, rss: memoryOf(pid).resident };
  } finally {
    npm.kill('SIGTERM');
    await new Promise((resolve) => npm.once('close', resolve));
  }
}

export async function startup(ctx: Context): Promise<ScenarioResult> {
  const turns = ctx.quick ? 1 : 3;
  const herald: { readyMs: number; rss: number }[] = [];
  const baseline: { readyMs: number; rss: number }[] = [];
  for (let turn = 0; turn < turns; turn++) {
    herald.push(await npmStart());
    const began = nowMs();
    const started = await startBaseline(ctx, `startup-baseline-${turn}`, 'none', '', 1);
    const readyMs = nowMs() - began;
    await sleep(IDLE_MS);
    baseline.push({ readyMs, rss: memoryOf(started.child.pid).resident });
    await started.child.stop();
  }
  const ready = summarize(herald.map((run) => run.readyMs)).p50;
  const rssMb = round(summarize(herald.map((run) => run.rss)).p50 / 2 ** 20, 0);
  const baseReady = summarize(baseline.map((run) => run.readyMs)).p50;
  const baseRssMb = round(summarize(baseline.map((run) => run.rss)).p50 / 2 ** 20, 0);
  return {
    name: 'startup',
    title: '`npm start` to /healthz 200, and idle RSS (SQLite, role all)',
    store: 'sqlite',
    figures: { readyMs: round(ready, 0), idleRssMb: rssMb },
    baseline: { readyMs: round(baseReady, 0), idleRssMb: baseRssMb },
    ratios: { readyVsBaseline: round(ready / baseReady), idleRssVsBaseline: round(rssMb / baseRssMb) },
    peakRssMb: rssMb,
    targets: [
      target('startup: npm start to /healthz 200', '< 2,000 ms', round(ready, 0), ready < 2_000),
      target('startup: idle RSS', '< 160 MB', rssMb, rssMb < 160),
    ],
    notes: [
      `median of ${turns} starts on an empty data directory; RSS after ${IDLE_MS / 1000} s idle; baseline = ` +
        'bench/baseline-ingest.ts without a store, started with node directly',
    ],
    seconds: 0,
  };
}
