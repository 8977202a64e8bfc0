import { randomBytes } from 'node:crypto';
import Fastify from 'fastify';
import SQLite from 'better-sqlite3';
import pg from 'pg';

// Baseline for ingest: a bare fastify route that validates the same emit body as Herald and, in one
// transaction per request, looks up the application's endpoint and writes the message and one delivery
// row. SQLite (WAL, synchronous=NORMAL, better-sqlite3) or PostgreSQL (pg pool, BEGIN/COMMIT per request).
// No auth, no rate limits, no logging: the floor that Herald's extra work is compared against.
// BASELINE_STORE=none: the same route and validation with no database at all, which tells how fast
// this machine is (the absolute targets were set where such a route answered ~37,000/s).

const store = (['postgres', 'none'] as const).find((name) => name === process.env.BASELINE_STORE) ?? 'sqlite';
const target = process.env.BASELINE_DB!;
const apps = Number(process.env.BASELINE_APPS ?? 10);
const port = Number(process.env.PORT ?? 0);

// Time-ordered ids, as Herald uses: inserts append to the B-tree.
let lastMs = 0;
let seq = 0;
const prefix = randomBytes(3).toString('hex');
function newId(kind: string): string {
  const ms = Date.now();
  seq = ms === lastMs ? seq + 1 : 0;
  lastMs = ms;
  return `${kind}_${ms.toString(36).padStart(9, '0')}${seq.toString(36).padStart(4, '0')}${prefix}`;
}

const DDL = [
  'create table if not exists endpoints (id text primary key, app_id text not null, url text not null)',
  'create index if not exists endpoints_by_app on endpoints (app_id)',
  'create table if not exists messages (id text primary key, app_id text not null, event_type text not null, payload text not null, created_at bigint not null)',
  'create table if not exists deliveries (id text primary key, message_id text not null, endpoint_id text not null, status text not null, next_attempt_at bigint, created_at bigint not null)',
  'create index if not exists deliveries_due on deliveries (next_attempt_at, id)',
];

interface Emit {
  app_id: string;
  event_type: string;
  payload: object;
}
type Writer = (body: Emit) => Promise<{ id: string; delivery_ids: string[] } | null>;

async function sqliteWriter(): Promise<Writer> {
  const db = new SQLite(target);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  for (const statement of DDL) db.exec(statement);
  const seed = db.prepare('insert or ignore into endpoints (id, app_id, url) values (?, ?, ?)');
  for (let i = 0; i < apps; i++) seed.run(`ep_${i}`, `app_${i}`, 'http://127.0.0.1:9/hook');
  const endpointsOf = db.prepare('select id from endpoints where app_id = ?');
  const insertMessage = db.prepare(
    'insert into messages (id, app_id, event_type, payload, created_at) values (?, ?, ?, ?, ?)',
  );
  const insertDelivery = db.prepare(
    'insert into deliveries (id, message_id, endpoint_id, status, next_attempt_at, created_at) values (?, ?, ?, ?, ?, ?)',
  );
  const emit = db.transaction((body: Emit) => {
    const endpoints = endpointsOf.all(body.app_id) as { id: string }[];
    if (endpoints.length === 0) return null;
    const now = Date.now();
    const id = newId('evt');
    insertMessage.run(id, body.app_id, body.event_type, JSON.stringify(body.payload), now);
    const ids = endpoints.map((endpoint) => {
      const deliveryId = newId('dlv');
      insertDelivery.run(deliveryId, id, endpoint.id, 'pending', now, now);
      return deliveryId;
    });
    return { id, delivery_ids: ids };
  });
  return async (body) => emit(body);
}

async function postgresWriter(): Promise<Writer> {
  const pool = new pg.Pool({ connectionString: target, max: 10 });
  for (const statement of DDL) await pool.query(statement);
  for (let i = 0; i < apps; i++)
    await pool.query('insert into endpoints (id, app_id, url) values ($1, $2, $3) on conflict do nothing', [
      `ep_${i}`,
      `app_${i}`,
      'http://127.0.0.1:9/hook',
    ]);
  return async (body) => {
    const client = await pool.connect();
    try {
      await client.query('begin');
      const endpoints = (
        await client.query({ name: 'eps', text: 'select id from endpoints where app_id = $1', values: [body.app_id] })
      ).rows as { id: string }[];
      if (endpoints.length === 0) {
        await client.query('rollback');
        return null;
      }
      const now = Date.now();
      const id = newId('evt');
      await client.query({
        name: 'msg',
        text: 'insert into messages (id, app_id, event_type, payload, created_at) values ($1, $2, $3, $4, $5)',
        values: [id, body.app_id, body.event_type, JSON.stringify(body.payload), now],
      });
      const ids: string[] = [];
      for (const endpoint of endpoints) {
        const deliveryId = newId('dlv');
        await client.query({
          name: 'dlv',
          text: 'insert into deliveries (id, message_id, endpoint_id, status, next_attempt_at, created_at) values ($1, $2, $3, $4, $5, $6)',
          values: [deliveryId, id, endpoint.id, 'pending', now, now],
        });
        ids.push(deliveryId);
      }
      await client.query('commit');
      return { id, delivery_ids: ids };
    } catch (error) {
      await client.query('rollback').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  };
}

/** No database: answers as if it had written the message and one delivery. */
async function noWriter(): Promise<Writer> {
  return async () => ({ id: newId('evt'), delivery_ids: [newId('dlv')] });
}

const write =
  store === 'postgres' ? await postgresWriter() : store === 'none' ? await noWriter() : await sqliteWriter();
const app = Fastify({ logger: false, keepAliveTimeout: 65_000 });
app.post(
  '/api/v1/messages',
  {
    schema: {
      body: {
        type: 'object',
        required: ['app_id', 'event_type', 'payload'],
        properties: {
          app_id: { type: 'string', minLength: 1, maxLength: 256 },
          event_type: { type: 'string', minLength: 1, maxLength: 255 },
          payload: { type: 'object', additionalProperties: true },
          idempotency_key: { type: 'string', minLength: 1, maxLength: 255 },
        },
      },
    },
  },
  async (request, reply) => {
    const result = await write(request.body as Emit);
    if (!result) return reply.code(404).send({ error: { code: 'not_found', message: 'application not found' } });
    return reply.code(201).send({ object: 'message', ...result });
  },
);
app.get('/healthz', async () => ({ ok: true }));
await app.listen({ port, host: '127.0.0.1' });
console.log(`baseline (${store}) listening on ${port}`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
