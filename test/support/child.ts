import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { REPO_ROOT, SERVICE_COMMAND } from './paths.js';

// Runs the real service as a child process (`node main.js serve`, compiled), so a test can
// SIGKILL or SIGTERM it and start it again on the same store.

/** Whether process `pid` exists (one that is not ours to signal, EPERM, exists too). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface Child {
  process: ChildProcess;
  /** Base URL of the API (null for a worker-only process). */
  url: string | null;
  output: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export const BASE_ENV = {
  HOST: '127.0.0.1',
  HERALD_SECRET_KEY: 'test-secret-key-that-is-long-enough-0123456789',
  HERALD_DEFAULT_PLAN: 'unlimited',
  HERALD_LOG_LEVEL: 'warn',
  // Tests of retries, recovery and crashes fail dozens of attempts on purpose: the circuit breaker would
  // hold their deliveries for its cooldown. Its own tests set what they need (circuit-breaker.test.ts).
  HERALD_CIRCUIT_MIN_ATTEMPTS: '1000000',
};

/** Starts the service and resolves once it says it is running. */
export async function startChild(env: Record<string, string>, timeoutMs = 60_000): Promise<Child> {
  const port = env.PORT ?? String(await freePort());
  const child = spawn(process.execPath, [...SERVICE_COMMAND, 'serve'], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', ...BASE_ENV, PORT: port, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const ready = new Promise<string | null>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`service did not start in ${timeoutMs}ms:\n${output.join('')}`)),
      timeoutMs,
    );
    const onData = (chunk: Buffer) => {
      output.push(chunk.toString());
      const text = output.join('');
      const listening = /listening on (http:\/\/\S+)/.exec(text);
      if (listening || /worker running/.test(text)) {
        clearTimeout(timer);
        resolve(listening ? listening[1]! : null);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`service exited before it was ready:\n${output.join('')}`));
    });
  });
  const url = await ready;
  return { process: child, url, output, exited };
}

/** Stops a child if it still runs (SIGKILL after a grace), for test clean-up. */
export async function killChild(child: Child): Promise<void> {
  if (child.process.exitCode !== null || child.process.signalCode !== null) return;
  child.process.kill('SIGTERM');
  const timer = setTimeout(() => child.process.kill('SIGKILL'), 10_000);
  await child.exited;
  clearTimeout(timer);
}
