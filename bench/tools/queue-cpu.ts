// Measures what the queue's own work costs per delivery, without HTTP: N deliveries to one endpoint are
// claimed in top-ups of `claim` and recorded as 2xx outcomes in batches of `batch`, on the store given;
// prints the process's CPU per delivery (less what reading the server's costs it) and, on PostgreSQL, the
// server's (every postgres process, claims apart) and the time an outcome batch takes. A tool for profiling the queue, not a benchmark with a
// baseline: npm run bench is that.
// node scripts/run.mjs bench/tools/queue-cpu.ts [sqlite|postgres] [N] [claim] [batch]
// QCPU_STATS=1 also prints PostgreSQL's row counters (updates, HOT updates, deletes) of the queue's tables.
// QCPU_HEADERS=0 records outcomes without the request's and answer's headers (each attempt keeps them).
// QCPU_PARTITIONED=1 (PostgreSQL) partitions the history tables first, as `herald partition` does;
// QCPU_PARTITIONS_AHEAD=N makes N partitions ahead of now (default 3), standing in for the days retention keeps.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { Store } from '../../src/store/index.js';
import { commandCpuMs } from '../lib/cpu.js';
import { headerBlock } from '../../src/domain/headers.js';
import { USER_AGENT } from '../../src/domain/request-headers.js';

const [storeKind = 'sqlite', nText = '20000', claimText = '48', batchText = '24'] = process.argv.slice(2);
const N = Number(nText);
const dataDir = mkdtempSync(join(tmpdir(), 'herald-queue-cpu-'));
let databaseUrl = '';
let dbName = '';
if (storeKind === 'postgres') {
  dbName = `herald_qcpu_${process.pid}`;
  const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  await admin.query(`create database ${dbName}`);
  await admin.end();
  databaseUrl = `postgres://postgres@127.0.0.1:5432/${dbName}`;
}
const config = loadConfig({
  HERALD_DATA_DIR: dataDir,
  HERALD_SECRET_KEY: 'bench-secret-key-that-is-long-enough-0123456789',
  HERALD_DATABASE_URL: databaseUrl,
  HERALD_LOG_LEVEL: 'silent',
  HERALD_PARTITIONS_AHEAD: process.env.QCPU_PARTITIONS_AHEAD ?? '3',
});
const store = await Store.open(config);
if (storeKind === 'postgres' && process.env.QCPU_PARTITIONED === '1') await store.partitionTables();
const org = await store.organizations.create('qcpu', 'unlimited');
const scope = { orgId: org.id, livemode: false };
const app = await store.applications.create(scope, { name: 'qcpu' });
const { row: endpoint } = await store.endpoints.create(scope, { appId: app.id, url: 'http://127.0.0.1:9/hook' });
/** A request's and an answer's headers as the worker records them (src/delivery/request.ts, sender.ts). */
const headers = (messageId: string, at: number) =>
  process.env.QCPU_HEADERS === '0'
    ? {}
    : {
        requestHeaders: headerBlock(
          Object.entries({
            'content-type': 'application/json',
            'user-agent': USER_AGENT,
            'webhook-id': messageId,
            'webhook-timestamp': String(Math.floor(at / 1000)),
            'webhook-signature': 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
            traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
          }),
          true,
        ),
        responseHeaders:
          'content-type: text/plain\ndate: Fri, 27 Nov 2026 20:00:00 GMT\nconnection: keep-alive\nkeep-alive: timeout=5\ncontent-length: 2\n',
      };
const emits = [];
for (let i = 0; i < N; i++)
  emits.push(
    store.messages.emit({
      scope,
      appId: app.id,
      eventType: 'invoice.paid',
      payloadJson: `{"i":${i}}`,
      idempotencyKey: null,
    }),
  );
await Promise.all(emits);

const queue = store.queue;
const owner = 'wrk_qcpu';
// A profiler started on this line sees the drain alone.
console.log('  draining');
let done = 0;
/** CPU this process spent reading the server's (/proc of every process): left out of the queue's figure. */
let reading = { user: 0, system: 0 };
/** PostgreSQL's CPU so far, in ms; nothing to read on SQLite. */
function serverMs(): number {
  if (storeKind !== 'postgres') return 0;
  const before = process.cpuUsage();
  const ms = commandCpuMs('postgres');
  const spent = process.cpuUsage(before);
  reading = { user: reading.user + spent.user, system: reading.system + spent.system };
  return ms;
}
const cpu0 = process.cpuUsage();
const server0 = serverMs();
const t0 = performance.now();
let claimServer = 0;
let completeMs = 0;
let completes = 0;
while (done < N) {
  const before = serverMs();
  const claimed = await queue.claimLoaded(owner, Number(claimText), { only: endpoint.id });
  claimServer += serverMs() - before;
  if (claimed.length === 0) break;
  for (let i = 0; i < claimed.length; i += Number(batchText)) {
    const part = claimed.slice(i, i + Number(batchText));
    const at = Date.now();
    const t0 = performance.now();
    await queue.completeMany(
      part.map(({ input }) => ({
        input: input!,
        result: {
          ok: true,
          responseStatus: 200,
          responseBody: 'ok',
          ...headers(input!.delivery.messageId, at),
          error: null,
          durationMs: 1,
          retryAfterMs: null,
          at,
        },
      })),
      owner,
    );
    completeMs += performance.now() - t0;
    completes++;
    if (completes % 50 === 0) {
      console.log(
        `  after ${completes}: ${(completeMs / completes).toFixed(2)} ms avg, last ${(performance.now() - t0).toFixed(2)} ms`,
      );
    }
  }
  done += claimed.length;
}
const serverUs = ((serverMs() - server0) * 1000) / done;
const measured = process.cpuUsage(cpu0);
const cpu = { user: measured.user - reading.user, system: measured.system - reading.system };
console.log(`completes: ${completes}, ${(completeMs / completes).toFixed(2)} ms each`);
if (storeKind === 'postgres')
  console.log(`claims: PostgreSQL ${((claimServer * 1000) / done).toFixed(0)} µs per delivery`);
const ms = performance.now() - t0;
console.log(
  `${storeKind}: ${done} deliveries in ${ms.toFixed(0)} ms, ${(done / (ms / 1000)).toFixed(0)}/s, ` +
    `CPU ${((cpu.user + cpu.system) / done).toFixed(1)} µs per delivery (user ${(cpu.user / done).toFixed(1)}, system ${(cpu.system / done).toFixed(1)})` +
    (storeKind === 'postgres' ? `; PostgreSQL ${serverUs.toFixed(0)} µs` : ''),
);
if (storeKind === 'postgres') {
  const { rows } = await store.pool!.query(
    "select relname, n_tup_upd, n_tup_hot_upd, n_tup_del, n_tup_ins from pg_stat_user_tables where relname in ('deliveries','attempts') order by relname",
  );
  if (process.env.QCPU_STATS) console.log(rows);
}
await store.close();
rmSync(dataDir, { recursive: true, force: true });
if (dbName) {
  const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  await admin.query(`drop database ${dbName}`);
  await admin.end();
}
