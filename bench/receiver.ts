import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

// The webhook receiver, in its own process. It records the arrival time of every request by webhook-id
// (wall clock with sub-millisecond precision, comparable with the bench process's send times) and answers
// 200 at once, except under /slow/ where it answers after SLOW_MS. The bench talks to it over IPC.

const SLOW_MS = Number(process.env.BENCH_SLOW_MS ?? 5000);
const now = () => performance.timeOrigin + performance.now();

type Arrival = [id: string, at: number, path: string];
let arrivals: Arrival[] = [];
let expected: { id: number; count: number } | null = null;

function send(message: unknown) {
  process.send?.(message);
}

function checkExpected() {
  if (expected && arrivals.length >= expected.count) {
    send({ type: 'reached', id: expected.id, at: arrivals[expected.count - 1]![1], count: arrivals.length });
    expected = null;
  }
}

const server = createServer((req, res) => {
  req.on('data', () => {});
  req.on('end', () => {
    const path = req.url ?? '/';
    arrivals.push([String(req.headers['webhook-id'] ?? ''), now(), path]);
    checkExpected();
    if (path.startsWith('/slow/')) setTimeout(() => res.end('ok'), SLOW_MS);
    else res.end('ok');
  });
});
server.keepAliveTimeout = 65_000;

process.on('message', (raw) => {
  const message = raw as { cmd: string; id: number; count?: number };
  switch (message.cmd) {
    case 'reset':
      arrivals = [];
      expected = null;
      return send({ type: 'ok', id: message.id });
    case 'count':
      return send({ type: 'count', id: message.id, count: arrivals.length });
    case 'expect':
      expected = { id: message.id, count: message.count ?? 0 };
      return checkExpected();
    case 'arrivals':
      return send({ type: 'arrivals', id: message.id, arrivals });
  }
});
process.on('disconnect', () => process.exit(0));

server.listen(0, '127.0.0.1', () => send({ type: 'ready', port: (server.address() as AddressInfo).port }));
