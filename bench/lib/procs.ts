import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { sleep } from './stats.js';

// Every child process and temp dir the bench makes is registered here, so one cleanup() (on success,
// failure, a signal or the time limit) ends them all. Children also watch their parent (parent-watch.ts).

// The bench runs compiled (scripts/run.mjs builds .build/ and dist/): this file is .build/bench/lib/procs.js.
/** The checkout: docs/, bench/results/, dist/ (the built service). */
export const REPO = resolve(import.meta.dirname, '..', '..', '..');
/** The compiled bench's own files: benchFile('receiver.js') is the receiver process's script. */
export const benchFile = (...parts: string[]) => join(import.meta.dirname, '..', ...parts);
const WATCH = benchFile('lib', 'parent-watch.js');

const children = new Set<Child>();
const tempDirs = new Set<string>();
const cleanups: (() => Promise<void>)[] = [];
let closing = false;

/** Throws once cleanup has begun, so a scenario still running cannot start anything new. */
export function assertOpen(): void {
  if (closing) throw new Error('bench is stopping');
}

export interface Child {
  name: string;
  proc: ChildProcess;
  pid: number;
  logFile: string;
  exited: Promise<number | null>;
  /** Highest VmHWM / VmRSS seen, in bytes. */
  peakRss(): number;
  stop(graceMs?: number): Promise<void>;
}

export interface SpawnOptions {
  name: string;
  script: string;
  args?: string[];
  env?: Record<string, string>;
  ipc?: boolean;
  /** Extra node flags, e.g. --cpu-prof. */
  nodeFlags?: string[];
  /** Where the process runs; the checkout by default. */
  cwd?: string;
  logDir: string;
}

/** A process's resident memory now and its peak (VmRSS, VmHWM), in bytes; zeros once it has gone. */
export function memoryOf(pid: number): { resident: number; peak: number } {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(text)?.[1] ?? 0) * 1024;
    return { resident: kb('VmRSS'), peak: kb('VmHWM') };
  } catch {
    return { resident: 0, peak: 0 };
  }
}

function readStatus(pid: number): number {
  const { resident, peak } = memoryOf(pid);
  return Math.max(resident, peak);
}

export function spawnNode(options: SpawnOptions): Child {
  assertOpen();
  mkdirSync(options.logDir, { recursive: true });
  const logFile = join(options.logDir, `${options.name}.log`);
  const fd = openSync(logFile, 'a');
  const proc = spawn(
    process.execPath,
    ['--enable-source-maps', '--import', WATCH, ...(options.nodeFlags ?? []), options.script, ...(options.args ?? [])],
    {
      cwd: options.cwd ?? REPO,
      env: { ...process.env, ...options.env },
      stdio: options.ipc ? ['ignore', fd, fd, 'ipc'] : ['ignore', fd, fd],
    },
  );
  closeSync(fd);
  if (!proc.pid) throw new Error(`could not start ${options.name}`);
  const pid = proc.pid;
  let peak = 0;
  let done = false;
  const sample = () => {
    if (!done) peak = Math.max(peak, readStatus(pid));
  };
  const timer = setInterval(sample, 200);
  const exited = new Promise<number | null>((resolveExit) => {
    proc.on('exit', (code) => {
      done = true;
      clearInterval(timer);
      children.delete(child);
      resolveExit(code);
    });
  });
  const child: Child = {
    name: options.name,
    proc,
    pid,
    logFile,
    exited,
    peakRss: () => (sample(), peak),
    async stop(graceMs = 4_000) {
      sample();
      if (done) return;
      proc.kill('SIGTERM');
      const timedOut = await Promise.race([exited.then(() => false), sleep(graceMs).then(() => true)]);
      if (timedOut && !done) {
        proc.kill('SIGKILL');
        await exited;
      }
    },
  };
  children.add(child);
  return child;
}

export function tempDir(prefix: string): string {
  assertOpen();
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

export function removeTempDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  tempDirs.delete(dir);
}

export function onCleanup(fn: () => Promise<void>): void {
  cleanups.push(fn);
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

export async function stopAll(): Promise<void> {
  await Promise.all([...children].map((c) => c.stop(3_000).catch(() => {})));
}

/** Ends every child, removes temp dirs, runs registered cleanups (e.g. dropping PostgreSQL databases). */
export async function cleanup(): Promise<void> {
  closing = true;
  await stopAll();
  for (const fn of cleanups.splice(0)) await fn().catch((error) => console.error('cleanup:', (error as Error).message));
  for (const dir of [...tempDirs]) removeTempDir(dir);
}

/** Last resort on exit: kill whatever is still running, synchronously. */
export function killAllSync(): void {
  for (const child of children) {
    try {
      child.proc.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
}
