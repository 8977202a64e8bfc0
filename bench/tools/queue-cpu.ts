// Measures the CPU the queue's own work costs per delivery, without HTTP: N deliveries to one endpoint are
// claimed in top-ups and recorded as 2xx outcomes in batches, on the store given (sqlite or postgres).
// node --import tsx bench/tools/queue-cpu.ts [sqlite|postgres] [N] [claim] [batch]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { Store } from '../../src/store/index.js';

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
});
const store = await Store.open(config);
const org = await store.organizations.create('qcpu', 'unlimited');
const scope = { orgId: org.id, livemode: false };
const app = await store.applications.create(scope, { name: 'qcpu' });
const { row: endpoint } = await store.endpoints.create(scope, { appId: app.id, url: 'http://127.0.0.1:9/hook' });
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
let done = 0;
const cpu0 = process.cpuUsage();
const t0 = performance.now();
while (done < N) {
  const claimed = await queue.claimLoaded(owner, Number(claimText), { only: endpoint.id });
  if (claimed.length === 0) break;
  for (let i = 0; i < claimed.length; i += Number(batchText)) {
    const part = claimed.slice(i, i + Number(batchText));
    const at = Date.now();
    await queue.completeMany(
      part.map(({ input }) => ({
        input: input!,
        result: {
          ok: true,
          responseStatus: 200,
          responseBody: 'ok',
          error: null,
          durationMs: 1,
          retryAfterMs: null,
          at,
        },
      })),
      owner,
    );
  }
  done += claimed.length;
}
const cpu = process.cpuUsage(cpu0);
const ms = performance.now() - t0;
console.log(
  `${storeKind}: ${done} deliveries in ${ms.toFixed(0)} ms, ${(done / (ms / 1000)).toFixed(0)}/s, ` +
    `CPU ${((cpu.user + cpu.system) / done).toFixed(1)} µs per delivery (user ${(cpu.user / done).toFixed(1)}, system ${(cpu.system / done).toFixed(1)})`,
);
await store.close();
rmSync(dataDir, { recursive: true, force: true });
if (dbName) {
  const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  await admin.query(`drop database ${dbName}`);
  await admin.end();
}
