import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processAlive } from './child.js';

// A throwaway PostgreSQL server of a test's own, for tests that stop and restart the database under the
// service. initdb into a temp dir, on a free loopback port, with its socket in that dir. As root the
// server runs as the `postgres` user (PostgreSQL refuses to run as root).
//
// The temp dir is named herald-pg-<pid>-…; `sweepStaleClusters` stops and removes those whose test
// process is gone (scripts/test.mjs runs it), so a killed test run does not leave servers behind.

export const PG_BIN = process.env.SUITE_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const DIR_PREFIX = 'herald-pg-';

export interface PgCluster {
  port: number;
  dir: string;
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string;
  start(): Promise<void>;
  /** `pg_ctl stop -m fast`: disconnects every client and shuts down cleanly. */
  stop(): Promise<void>;
  restart(): Promise<void>;
  /** Stops the server (immediately) and removes its directory. Safe to call more than once. */
  destroy(): Promise<void>;
  /** The server's log, for failure messages. */
  log(): string;
}

const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;

function run(command: string, args: string[], timeoutMs = 60_000): Promise<string> {
  const [file, argv] = asRoot
    ? ['runuser', ['-u', 'postgres', '--', join(PG_BIN, command), ...args]]
    : [join(PG_BIN, command), args];
  return new Promise((resolve, reject) => {
    execFile(file, argv, { timeout: timeoutMs }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(' ')} failed: ${error.message}\n${stdout}${stderr}`));
      else resolve(stdout + stderr);
    });
  });
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function createPgCluster(): Promise<PgCluster> {
  const dir = mkdtempSync(join(tmpdir(), `${DIR_PREFIX}${process.pid}-`));
  const data = join(dir, 'data');
  const logFile = join(dir, 'server.log');
  if (asRoot) {
    const { uid, gid } = postgresUser();
    chownSync(dir, uid, gid);
  }
  let destroyed = false;
  const destroy = async () => {
    if (destroyed) return;
    destroyed = true;
    if (existsSync(join(data, 'postmaster.pid')))
      await run('pg_ctl', ['-D', data, 'stop', '-m', 'immediate', '-w', '-t', '30']).catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
    const port = await freePort();
    const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=100 -c shared_buffers=32MB`;
    const start = async () =>
      void (await run('pg_ctl', ['-D', data, '-o', options, '-l', logFile, '-w', '-t', '60', 'start']));
    await start();
    return {
      port,
      dir,
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      start,
      stop: async () => void (await run('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop'])),
      restart: async () =>
        void (await run('pg_ctl', [
          '-D',
          data,
          '-o',
          options,
          '-l',
          logFile,
          '-m',
          'fast',
          '-w',
          '-t',
          '60',
          'restart',
        ])),
      destroy,
      log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
    };
  } catch (error) {
    await destroy();
    throw error;
  }
}

function postgresUser(): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('no postgres user to run a test PostgreSQL server as');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/** Stops and removes test clusters whose test process has exited (it was killed before its cleanup ran). */
export async function sweepStaleClusters(): Promise<string[]> {
  const removed: string[] = [];
  for (const name of readdirSync(tmpdir())) {
    const match = new RegExp(`^${DIR_PREFIX}(\\d+)-`).exec(name);
    if (!match || processAlive(Number(match[1]))) continue;
    const dir = join(tmpdir(), name);
    const data = join(dir, 'data');
    if (existsSync(join(data, 'postmaster.pid')))
      await run('pg_ctl', ['-D', data, 'stop', '-m', 'immediate', '-w', '-t', '30']).catch(() => {});
    rmSync(dir, { recursive: true, force: true });
    removed.push(dir);
  }
  return removed;
}
