import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// The webhook receiver, in its own process. It records the arrival time of every request by webhook-id
// (wall clock with sub-millisecond precision, comparable with the bench process's send times), and the
// emit time the body carries as `"emitted_at":<ms>` when it carries one, and answers 200 at once, except
// under /slow/ where it answers after SLOW_MS. The bench talks to it over IPC.

const SLOW_MS = Number(process.env.BENCH_SLOW_MS ?? 5000);
const STAMP = Buffer.from('"emitted_at":');
const now = () => performance.timeOrigin + performance.now();

type Arrival = [id: string, at: number, path: string, emittedAt?: number];
let arrivals: Arrival[] = [];
let expected: { id: number; count: number } | null = null;
/** Slow answers not given yet. */
const waitingSlow = new Map<ServerResponse, NodeJS.Timeout>();
/** After `cut`, until `reset`: a slow request's connection is closed as soon as its body is in. */
let cutting = false;

function send(message: unknown) {
  process.send?.(message);
}

function checkExpected() {
  if (expected && arrivals.length >= expected.count) {
    send({ type: 'reached', id: expected.id, at: arrivals[expected.count - 1]![1], count: arrivals.length });
    expected = null;
  }
}

/** The number after the body's first `"emitted_at":`, or undefined without one. */
function emittedAt(body: Buffer): number | undefined {
  const from = body.indexOf(STAMP);
  if (from < 0) return undefined;
  const value = Number.parseFloat(body.toString('latin1', from + STAMP.length, from + STAMP.length + 32));
  return Number.isFinite(value) ? value : undefined;
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const path = req.url ?? '/';
    const at = now();
    const stamp = emittedAt(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    arrivals.push(
      stamp === undefined
        ? [String(req.headers['webhook-id'] ?? ''), at, path]
        : [String(req.headers['webhook-id'] ?? ''), at, path, stamp],
    );
    checkExpected();
    if (!path.startsWith('/slow/')) return void res.end('ok');
    if (cutting) return void req.socket.destroy();
    waitingSlow.set(
      res,
      setTimeout(() => {
        waitingSlow.delete(res);
        res.end('ok');
      }, SLOW_MS),
    );
  });
});
server.keepAliveTimeout = 65_000;

process.on('message', (raw) => {
  const message = raw as { cmd: string; id: number; count?: number; prefix?: string };
  switch (message.cmd) {
    case 'reset':
      arrivals = [];
      expected = null;
      cutting = false;
      return send({ type: 'ok', id: message.id });
    case 'count': {
      const prefix = message.prefix;
      const count = prefix ? arrivals.filter((a) => a[2].startsWith(prefix)).length : arrivals.length;
      return send({ type: 'count', id: message.id, count });
    }
    case 'expect':
      expected = { id: message.id, count: message.count ?? 0 };
      return checkExpected();
    case 'arrivals':
      return send({ type: 'arrivals', id: message.id, arrivals });
    case 'cut':
      // The slow answers still waiting are cut off (their connections closed), and so is every slow
      // request until the next reset: a contender being stopped is not held 5 s by an attempt in flight.
      cutting = true;
      for (const [res, timer] of waitingSlow) {
        clearTimeout(timer);
        res.socket?.destroy();
      }
      waitingSlow.clear();
      return send({ type: 'ok', id: message.id });
  }
});
process.on('disconnect', () => process.exit(0));

server.listen(0, '127.0.0.1', () => send({ type: 'ready', port: (server.address() as AddressInfo).port }));
