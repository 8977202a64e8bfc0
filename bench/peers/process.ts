import { randomBytes } from 'node:crypto';
import { createDatabase } from '../lib/pg.js';
import { benchFile, onCleanup, spawnNode, type Child } from '../lib/procs.js';
import type { Context } from '../lib/context.js';
import { removeKeys } from './bullmq.js';

// A peer's worker process as the bench starts it (bench/peers/child.ts), on a fresh queue of its own (a
// Redis key prefix, or a throwaway PostgreSQL database) that is removed when the process is closed, and
// the commands the bench sends it over IPC.

export type Peer = 'bullmq' | 'graphile-worker';

export interface PeerOptions {
  /** Jobs in flight in the worker, and the sender's connections. */
  concurrency: number;
  /** The endpoint of jobs that carry no URL of their own. */
  url: string;
  /** The backlog the child enqueues itself on `enqueue`; none when the bench adds the jobs. */
  count?: number;
}

export interface PeerProcess {
  child: Child;
  /** The Redis key prefix (BullMQ) or the PostgreSQL database's URL (graphile-worker) of its queue. */
  queue: string;
  /** Sends a command; resolves with the child's answer, rejects on its error, its exit or the time limit. */
  ask(cmd: 'enqueue' | 'start' | 'finish', timeoutMs: number): Promise<Record<string, unknown>>;
  /** Stops the child if it still runs, then removes its queue. */
  close(): Promise<void>;
}

export async function startPeer(ctx: Context, peer: Peer, options: PeerOptions): Promise<PeerProcess> {
  const env: Record<string, string> = {
    PEER: peer,
    PEER_CONCURRENCY: String(options.concurrency),
    PEER_URL: options.url,
    // graphile-worker's documented switch for its per-job success log line.
    NO_LOG_SUCCESS: '1',
  };
  if (options.count) env.PEER_COUNT = String(options.count);
  let queue: string;
  let removeQueue: () => Promise<void>;
  if (peer === 'bullmq') {
    const prefix = `herald-bench-${randomBytes(4).toString('hex')}`;
    queue = prefix;
    env.PEER_REDIS_PREFIX = prefix;
    let removed = false;
    removeQueue = async () => {
      if (removed) return;
      removed = true;
      await removeKeys(prefix);
    };
    onCleanup(removeQueue);
  } else {
    const database = await createDatabase('peer');
    queue = database.url;
    env.PEER_DATABASE_URL = database.url;
    removeQueue = database.drop;
  }
  const child = spawnNode({
    name: `peer-${peer}`,
    script: benchFile('peers', 'child.js'),
    env,
    ipc: true,
    logDir: ctx.logDir,
  });
  const close = async () => {
    await child.stop();
    await removeQueue();
  };
  try {
    await reply(child, 'ready', 30_000);
  } catch (error) {
    await close();
    throw error;
  }
  return {
    child,
    queue,
    ask(cmd, timeoutMs) {
      child.proc.send({ cmd });
      return reply(child, cmd, timeoutMs);
    },
    close,
  };
}

/** The child's next message of this type; rejects on its error message, its exit or the time limit. */
function reply(child: Child, type: string, timeoutMs: number): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const done = (error: Error | null, message?: Record<string, unknown>) => {
      clearTimeout(timer);
      child.proc.off('message', onMessage);
      child.proc.off('exit', onExit);
      if (error) reject(error);
      else resolve(message!);
    };
    const onMessage = (raw: unknown) => {
      const message = raw as Record<string, unknown>;
      if (message.type === type) done(null, message);
      else if (message.type === 'error') done(new Error(`${child.name}: ${message.cmd}: ${message.error}`));
    };
    const onExit = (code: number | null) =>
      done(new Error(`${child.name} exited (${code}) waiting for ${type}; see ${child.logFile}`));
    const timer = setTimeout(
      () => done(new Error(`${child.name}: no ${type} in ${timeoutMs / 1000}s; see ${child.logFile}`)),
      timeoutMs,
    );
    child.proc.on('message', onMessage);
    child.proc.once('exit', onExit);
  });
}
