import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Worker } from 'node:worker_threads';
import {
  Attempt,
  BlockedAddressError,
  guardedConnector,
  guardedLookup,
  Sender,
  type SendResult,
} from '../../../src/delivery/sender.js';

// The Sender on its own against a real HTTP server on loopback (Test-mode requests, which may reach it):
// the attempt timeout bounds the whole attempt, body included, and each attempt gets its own deadline.

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** A receiver on loopback that handles each request once its body is read, counting the connections made to it. */
async function receiverCounting(t: TestContext, handle: Handler): Promise<{ url: string; connections: () => number }> {
  let connections = 0;
  const http = createServer((req, res) => req.resume().on('end', () => handle(req, res)));
  http.on('connection', () => connections++);
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => (http.closeAllConnections(), http.close(() => resolve()))));
  return { url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`, connections: () => connections };
}

async function server(t: TestContext, handle: Handler): Promise<string> {
  return (await receiverCounting(t, handle)).url;
}

/** connectionsPerOrigin 1: every request goes over one connection, and the next waits for it. */
function sender(t: TestContext, attemptTimeoutMs: number, connectionsPerOrigin = 8): Sender {
  const s = new Sender({ attemptTimeoutMs, connectionsPerOrigin, responseBodyLimit: 1024, ssrfAllow: [] });
  t.after(() => s.close());
  return s;
}

const request = (url: string) => ({
  url,
  body: '{}',
  headers: { 'content-type': 'application/json' },
  publicOnly: false,
});

test('an answer whose body never ends fails as timed out, at the attempt timeout', { timeout: 10_000 }, async (t) => {
  const url = await server(t, (_req, res) => {
    // Headers at once, then a trickle that never completes.
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('still going');
  });
  const result = await sender(t, 400).send(request(`${url}/trickle`));
  assert.equal(result.ok, false);
  assert.match(result.error ?? '', /timed out after 400ms/);
  assert.ok(result.durationMs >= 350 && result.durationMs < 2_000, `ended at the deadline (${result.durationMs} ms)`);
});

test("each attempt has its own deadline: one started later is not cut at an earlier attempt's", async (t) => {
  const url = await server(t, (req, res) => {
    setTimeout(() => res.end('ok'), req.url === '/slowish' ? 250 : 0);
  });
  const s = sender(t, 400);
  const first = await s.send(request(`${url}/quick`));
  assert.equal(first.ok, true);
  await new Promise((resolve) => setTimeout(resolve, 250));
  // Started 250 ms after the first, so it runs past the first attempt's deadline (400 ms) but not its own.
  const second = await s.send(request(`${url}/slowish`));
  assert.equal(second.ok, true, `second attempt succeeded: ${second.error}`);
  assert.equal(second.responseBody, 'ok');
});

test('attempts keep their deadlines behind a hung one and after thousands that finished', {
  timeout: 20_000,
}, async (t) => {
  const url = await server(t, (req, res) => {
    if (req.url !== '/hang') res.end('ok');
  });
  // A deadline roomy enough that none of the quick attempts meets it on a busy machine.
  const s = sender(t, 1_500);
  const hungFirst = s.send(request(`${url}/hang`));
  let next = 0;
  const quick: boolean[] = [];
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next++ < 2_000) quick.push((await s.send(request(`${url}/ok`))).ok);
    }),
  );
  assert.equal(quick.filter(Boolean).length, 2_000, 'every quick attempt succeeded');
  const hungLater = await s.send(request(`${url}/hang`));
  assert.match((await hungFirst).error ?? '', /timed out after 1500ms/);
  assert.match(hungLater.error ?? '', /timed out after 1500ms/);
  assert.ok(hungLater.durationMs >= 1_450, `the later one ran to its own deadline (${hungLater.durationMs} ms)`);
});

test('an answer that arrived while the event loop was stalled past the deadline is kept, not aborted as a timeout', {
  timeout: 10_000,
}, async (t) => {
  // The receiver runs on a thread of its own, so it answers while this thread is blocked. It flags the
  // request's arrival in shared memory and answers 20 ms later.
  const arrived = new Int32Array(new SharedArrayBuffer(4));
  const receiver = new Worker(
    `const { createServer } = require('node:http');
     const { parentPort, workerData } = require('node:worker_threads');
     const flag = new Int32Array(workerData);
     createServer((req, res) => req.resume().on('end', () => {
       Atomics.store(flag, 0, 1);
       setTimeout(() => res.end('ok'), 20);
     })).listen(0, '127.0.0.1', function () { parentPort.postMessage(this.address().port); });`,
    { eval: true, workerData: arrived.buffer },
  );
  t.after(() => receiver.terminate());
  const port = await new Promise<number>((resolve) => receiver.once('message', resolve));
  const attempt = sender(t, 300).send(request(`http://127.0.0.1:${port}/hook`));
  while (Atomics.load(arrived, 0) === 0) await new Promise((resolve) => setTimeout(resolve, 1));
  // A stall (a long GC pause, a starved core) well past the 300 ms timeout, with the answer on its way;
  // outside the timers phase, so that the next turn of the event loop runs the expired timers first.
  setImmediate(() => {
    const stallUntil = performance.now() + 800;
    while (performance.now() < stallUntil);
  });
  const result = await attempt;
  assert.equal(result.ok, true, `the answer was kept: ${result.error}`);
  assert.equal(result.responseBody, 'ok');
});

test('the connection guard checks the peer a connection reached: Live only public ones, Test anything but link-local and metadata ones', async () => {
  // A stand-in for undici's connector: "connects" to the given peer address, whatever the host name said.
  const reaching = (remoteAddress: string) => {
    const socket = {
      remoteAddress,
      destroyed: false,
      destroy() {
        this.destroyed = true;
      },
    };
    const base = ((_options: unknown, callback: (error: Error | null, socket: unknown) => void) =>
      callback(null, socket)) as unknown as Parameters<typeof guardedConnector>[0];
    return { socket, base };
  };
  const connect = (remoteAddress: string, livemode: boolean, allow: string[] = []) =>
    new Promise<{ error: Error | null; destroyed: boolean }>((resolve) => {
      const { socket, base } = reaching(remoteAddress);
      const options = {
        protocol: 'http:',
        hostname: 'receiver.example',
        host: 'receiver.example',
        port: '80',
      } as Parameters<ReturnType<typeof guardedConnector>>[0];
      guardedConnector(
        base,
        livemode,
        allow,
      )(options, (...args) => resolve({ error: args[0], destroyed: socket.destroyed }));
    });
  for (const address of ['169.254.169.254', 'fd00:ec2::254', '64:ff9b::a9fe:a9fe']) {
    const test = await connect(address, false);
    assert.ok(test.error instanceof BlockedAddressError, `${address} in Test: ${test.error}`);
    assert.equal(test.destroyed, true, 'the refused socket is closed');
  }
  for (const address of ['127.0.0.1', '10.0.0.5', '::1']) {
    assert.equal((await connect(address, false)).error, null, `${address} in Test`);
    assert.ok((await connect(address, true)).error instanceof BlockedAddressError, `${address} in Live`);
  }
  assert.equal((await connect('8.8.8.8', true)).error, null);
  assert.equal((await connect('169.254.169.254', false, ['receiver.example'])).error, null, 'allow-listed host name');
});

test('the DNS lookup of a connection keeps only the addresses its endpoint may reach, and names none when it keeps nothing', async () => {
  // A stand-in resolver: what a name resolves to is up to its DNS, which may point it anywhere.
  const answers: Record<string, string[]> = {
    'mixed.example': ['10.0.0.7', '8.8.8.8', '::1'],
    'inside.example': ['10.0.0.7', '127.0.0.1'],
    'meta.example': ['169.254.169.254'],
  };
  const resolver = ((
    hostname: string,
    _options: unknown,
    callback: (error: Error | null, addresses: { address: string; family: number }[]) => void,
  ) =>
    callback(
      null,
      (answers[hostname] ?? []).map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    )) as unknown as Parameters<typeof guardedLookup>[2];
  const resolve = (hostname: string, livemode: boolean, all: boolean, allow: string[] = []) =>
    new Promise<{ error: Error | null; result: unknown }>((done) =>
      guardedLookup(livemode, allow, resolver)(hostname, { all }, (error: Error | null, result: unknown) =>
        done({ error, result }),
      ),
    );
  assert.deepEqual((await resolve('mixed.example', true, true)).result, [{ address: '8.8.8.8', family: 4 }]);
  assert.deepEqual((await resolve('mixed.example', true, false)).result, '8.8.8.8');
  assert.deepEqual(
    (await resolve('mixed.example', false, true)).result,
    answers['mixed.example']!.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
  );
  const inside = await resolve('inside.example', true, true);
  assert.ok(inside.error instanceof BlockedAddressError);
  assert.match(inside.error.message, /inside\.example resolves only to non-public/);
  assert.doesNotMatch(
    inside.error.message,
    /10\.0\.0\.7|127\.0\.0\.1/,
    'the refusal does not tell what the name resolves to',
  );
  assert.ok(
    (await resolve('meta.example', false, true)).error instanceof BlockedAddressError,
    'Test: metadata address',
  );
  assert.equal((await resolve('inside.example', true, true, ['inside.example'])).error, null, 'allow-listed host name');
});

test("a TLS handshake that never completes fails as timed out at the attempt timeout, not at undici's coarse connect timer", {
  timeout: 20_000,
}, async (t) => {
  // Accepts TCP and then says nothing, so the client's TLS hello is never answered.
  const sockets = new Set<Socket>();
  let closed = 0;
  // Reads what arrives (else a closed connection would never show as closed here) and never answers.
  const silent = createNetServer((socket) =>
    sockets.add(
      socket
        .resume()
        .on('error', () => {})
        .on('close', () => closed++),
    ),
  );
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    // close() waits for the connections it accepted.
    for (const socket of sockets) socket.destroy();
    return new Promise<void>((resolve) => silent.close(() => resolve()));
  });
  const url = `https://127.0.0.1:${(silent.address() as AddressInfo).port}/hook`;
  const s = sender(t, 1_000);
  for (let round = 0; round < 3; round++) {
    const result = await s.send(request(url));
    assert.equal(result.ok, false);
    assert.match(result.error ?? '', /timed out after 1000ms/);
    assert.ok(result.durationMs >= 950 && result.durationMs < 1_150, `ended at the deadline (${result.durationMs} ms)`);
  }
  await new Promise((resolve) => setTimeout(resolve, 150));
  assert.equal(closed, 3, 'each connection was closed with its attempt, not left to a later timer');
});

test('a connection that completes after the connect timed out is closed, not handed to a request', async () => {
  const socket = {
    remoteAddress: '127.0.0.1',
    destroyed: false,
    destroy() {
      this.destroyed = true;
    },
  };
  const late = ((_options: unknown, callback: (error: Error | null, socket: unknown) => void) =>
    void setTimeout(() => callback(null, socket), 100)) as unknown as Parameters<typeof guardedConnector>[0];
  const options = { protocol: 'http:', hostname: 'localhost', host: 'localhost', port: '80' } as Parameters<
    ReturnType<typeof guardedConnector>
  >[0];
  const calls: (Error | null)[] = [];
  guardedConnector(late, false, [], 20)(options, (...args) => void calls.push(args[0]));
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(calls.length, 1, 'the request heard once');
  assert.equal(calls[0]?.name, 'TimeoutError');
  assert.equal(socket.destroyed, true);
});

test("an answer's headers and body: Retry-After in any letter case on 429, the body kept up to the limit and the rest not read", {
  timeout: 10_000,
}, async (t) => {
  const { url, connections } = await receiverCounting(t, (req, res) => {
    if (req.url === '/busy') return void res.writeHead(429, { 'Retry-After': '7' }).end('slow down');
    if (req.url === '/redirect') return void res.writeHead(302, { location: '/elsewhere' }).end();
    // A megabyte: far past the 1,024 bytes kept, so the connection is closed rather than drained.
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('é'.repeat(512 * 1024));
  });
  // One connection, so that every request goes over the same one while it stays open.
  const s = sender(t, 5_000, 1);
  const busy = await s.send(request(`${url}/busy`));
  assert.equal(busy.responseStatus, 429);
  assert.equal(busy.error, 'HTTP 429');
  assert.equal(busy.responseBody, 'slow down');
  assert.ok(
    busy.retryAfterMs !== null && Math.abs(busy.retryAfterMs - 7_000) < 1_500,
    `Retry-After read: ${busy.retryAfterMs}`,
  );
  const redirect = await s.send(request(`${url}/redirect`));
  assert.equal(redirect.ok, false);
  assert.equal(redirect.error, 'redirect (302) not followed');
  assert.equal(connections(), 1, 'one keep-alive connection so far');
  const large = await s.send(request(`${url}/large`));
  assert.equal(large.ok, true);
  assert.equal(large.responseBody, 'é'.repeat(512), 'the first 1,024 bytes, whole characters only');
  assert.equal(large.retryAfterMs, null);
  const after = await s.send(request(`${url}/busy`));
  assert.equal(after.responseStatus, 429, 'the sender still works after a connection it cut');
  assert.equal(connections(), 2, 'the connection of the large answer was closed, not drained and reused');
});

/** A receiver that never answers /hang, counting the other requests that reach it and its connections. */
async function hangingReceiver(
  t: TestContext,
): Promise<{ url: string; arrivals: () => number; connections: () => number }> {
  let arrivals = 0;
  const receiver = await receiverCounting(t, (req, res) => {
    if (req.url === '/hang') return;
    arrivals++;
    res.end('ok');
  });
  return { ...receiver, arrivals: () => arrivals };
}

test('an attempt that timed out while waiting for a connection is never sent, and costs no connection', {
  timeout: 10_000,
}, async (t) => {
  const receiver = await hangingReceiver(t);
  // The second attempt waits in undici's queue for the first one's connection.
  const s = sender(t, 500, 1);
  // A stall across both deadlines, so that both come due in one sweep and the waiting attempt is over
  // before the hung one's connection is replaced.
  setTimeout(() => {
    const stallUntil = performance.now() + 300;
    while (performance.now() < stallUntil);
  }, 400);
  const [hung, queued] = await Promise.all([
    s.send(request(`${receiver.url}/hang`)),
    s.send(request(`${receiver.url}/ok`)),
  ]);
  assert.match(hung.error ?? '', /timed out after 500ms/);
  assert.match(queued.error ?? '', /timed out after 500ms/);
  const later = await s.send(request(`${receiver.url}/ok`));
  assert.equal(later.ok, true, `a later attempt gets a connection: ${later.error}`);
  // The waiting attempt was over (its outcome recorded, a retry to come): sending it once a connection
  // came free would have delivered it twice.
  assert.equal(receiver.arrivals(), 1, 'only the later attempt reached the receiver');
  // The hung attempt's connection, then the one the waiting attempt was handed and left for the next.
  assert.equal(receiver.connections(), 2, 'the connection handed to the attempt that was over was kept');
});

test('a request undici hands a connection after its deadline is not written: it settles as timed out, and the connection is kept', async () => {
  // The sweep of deadlines runs after a turn's I/O, so undici may hand over a request whose deadline has
  // passed before the sweep reaches it (a connection freed in that same turn). Driven as undici does.
  const settled: SendResult[] = [];
  const late = new Attempt(performance.now() - 400, 300, 1024, (result) => settled.push(result));
  let aborted = 0;
  assert.throws(
    () => late.onConnect(() => aborted++),
    /attempt took longer than 300ms/,
    'thrown: undici then drops the request, unwritten',
  );
  assert.equal(aborted, 0, "not aborted: undici's abort would close the connection handed over");
  assert.equal(settled.length, 1);
  assert.match(settled[0]!.error ?? '', /timed out after 300ms/);
  const onTime = new Attempt(performance.now(), 300, 1024, (result) => settled.push(result));
  onTime.onConnect(() => aborted++);
  assert.equal(settled.length, 1, 'an attempt within its time is handed over and goes on');
});

test('finished attempts queued behind a hung one do not keep their results until its deadline', {
  timeout: 20_000,
}, async (t) => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const url = await server(t, (req, res) => {
    if (req.url !== '/hang') res.end('o'.repeat(1_000));
  });
  const s = sender(t, 5_000);
  const hung = s.send(request(`${url}/hang`));
  const results: WeakRef<object>[] = [];
  for (let i = 0; i < 200; i++) results.push(new WeakRef(await s.send(request(`${url}/ok`))));
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  const kept = results.filter((ref) => ref.deref() !== undefined).length;
  // All 200 sit in the deadline queue behind the hung attempt, which has seconds left.
  assert.ok(kept <= 2, `${kept} of 200 results still held`);
  void hung;
});
