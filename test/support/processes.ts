import { spawn, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'undici';
import { Client } from './client.js';
import { REPO_ROOT, SERVICE_COMMAND } from './paths.js';

// Runs Herald as separate OS processes, the way it is deployed at scale: `node main.js serve` (compiled)
// with HERALD_ROLE=api or worker, all on one database. Every process started here is killed when the test
// ends (t.after) and, as a last resort, when the test process itself exits.

export { REPO_ROOT };
export const SECRET_KEY = 'scale-out-test-secret-key-0123456789abcdef';

export interface HeraldProcess {
  role: string;
  child: ChildProcess;
  /** Base URL for API processes; '' for workers. */
  url: string;
  client: Client;
  /** Everything the process wrote, for failure messages. */
  output(): string;
  exited: Promise<number | null>;
  alive(): boolean;
  kill(signal?: NodeJS.Signals): void;
}

const started = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** The environment a child gets: this process's, without any HERALD_* setting that was not asked for. */
function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env))
    if (!name.startsWith('HERALD_') || name.startsWith('HERALD_TEST_')) base[name] = value;
  return {
    ...base,
    PORT: '0',
    HOST: '127.0.0.1',
    HERALD_SECRET_KEY: SECRET_KEY,
    HERALD_DEFAULT_PLAN: 'unlimited',
    HERALD_LOG_LEVEL: 'warn',
    // The circuit breaker stays out of tests that fail attempts on purpose (as test/support/child.ts says).
    HERALD_CIRCUIT_MIN_ATTEMPTS: '1000000',
    ...env,
  };
}

/** Starts `herald serve` in `role` and resolves once it says it is ready (API: its URL; worker: running). */
export async function startHerald(
  role: 'api' | 'worker' | 'all',
  env: Record<string, string>,
  { readyTimeoutMs = 60_000, nodeArgs = [] }: { readyTimeoutMs?: number; nodeArgs?: string[] } = {},
): Promise<HeraldProcess> {
  const child = spawn(process.execPath, [...nodeArgs, ...SERVICE_COMMAND, 'serve'], {
    cwd: REPO_ROOT,
    env: childEnv({ HERALD_ROLE: role, ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.add(child);
  let output = '';
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => (started.delete(child), resolve(code))),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`herald ${role} not ready in ${readyTimeoutMs}ms:\n${output}`)),
      readyTimeoutMs,
    );
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.length > 200_000) output = output.slice(-100_000);
      const listening = /listening on (http:\/\/\S+)/.exec(output);
      if (listening) return (clearTimeout(timer), resolve(listening[1]!));
      if (/Herald worker running/.test(output)) return (clearTimeout(timer), resolve(''));
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`herald ${role} exited with ${code} before it was ready:\n${output}`));
    });
  });
  return {
    role,
    child,
    url,
    client: new Client(url),
    output: () => output,
    exited,
    alive: () => child.exitCode === null && child.signalCode === null,
    kill: (signal = 'SIGKILL') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  };
}

/** Runs `herald <args>` to completion; resolves with its exit code and output. */
export function runHerald(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 60_000,
): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [...SERVICE_COMMAND, ...args], {
    cwd: REPO_ROOT,
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.add(child);
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      started.delete(child);
      resolve({ code, output });
    });
  });
}

/** Kills every process and waits until each has exited (bounded). */
export async function stopAll(processes: HeraldProcess[]): Promise<void> {
  for (const p of processes) p.kill('SIGKILL');
  await Promise.all(processes.map((p) => Promise.race([p.exited, new Promise((r) => setTimeout(r, 5_000))])));
}

/** Runs `work(i)` for i in [0, count) with at most `limit` in flight; resolves with the results in order. */
export async function pooled<T>(count: number, limit: number, work: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  const runner = async () => {
    while (next < count) {
      const i = next++;
      results[i] = await work(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, runner));
  return results;
}

/**
 * A lean JSON POST for load phases: undici's `request` over a keep-alive pool costs the test process a
 * fraction of what `fetch` does, which matters when the test shares two cores with seven other processes.
 */
export class LoadClient {
  private readonly agent: Agent;
  constructor(
    readonly baseUrl: string,
    private readonly key: string,
    connections = 32,
  ) {
    this.agent = new Agent({ connections, keepAliveTimeout: 30_000 });
  }
  /** `timeoutMs` bounds the wait for the answer's headers and then for its body. */
  async post(
    path: string,
    body: unknown,
    headers: Record<string, string> = {},
    timeoutMs = 30_000,
  ): Promise<{ status: number; headers: Record<string, unknown>; body: any }> {
    const response = await request(this.baseUrl + path, {
      method: 'POST',
      dispatcher: this.agent,
      headers: { authorization: `Bearer ${this.key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    const text = await response.body.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // keep text
    }
    return { status: response.statusCode, headers: response.headers, body: parsed };
  }
  close(): Promise<void> {
    return this.agent.close();
  }
}
