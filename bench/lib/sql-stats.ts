import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';

// Preloaded into a service process with `npm run bench -- --profile`: times every statement by SQL text
// and writes the totals to $BENCH_SQL_STATS when the process exits. Tells which queries the store spends
// its time on (a CPU profile shows them all as kysely's executeQuery). better-sqlite3: time on the event
// loop. pg: wall time from sending to the answer (round trip, server time and waiting included).
const require = createRequire(import.meta.url);
const Database = require('better-sqlite3') as { prototype: { prepare(sql: string): any } };
const totals = new Map<string, { calls: number; ms: number; rows: number }>();
const out = process.env.BENCH_SQL_STATS;

function record(sql: string, started: number, rows: number): void {
  const entry = totals.get(sql) ?? { calls: 0, ms: 0, rows: 0 };
  entry.calls++;
  entry.ms += performance.now() - started;
  entry.rows += rows;
  totals.set(sql, entry);
}

const prepare = Database.prototype.prepare;
Database.prototype.prepare = function (this: unknown, sql: string) {
  const statement = prepare.call(this, sql);
  for (const method of ['run', 'all', 'get', 'iterate'] as const) {
    const original = statement[method];
    if (typeof original !== 'function') continue;
    statement[method] = function (this: unknown, ...args: unknown[]) {
      const started = performance.now();
      const result = original.apply(this, args);
      record(sql, started, Array.isArray(result) ? result.length : 1);
      return result;
    };
  }
  return statement;
};

// kysely calls client.query(text, values) and awaits the promise.
const pgClient = (require('pg') as { Client: { prototype: { query(...args: any[]): any } } }).Client.prototype;
const query = pgClient.query;
// Keyed by the full SQL text, like the SQLite side: a statement whose text grows with its rows (multi-row
// inserts, the completion statement) shows once per row count.
pgClient.query = function (this: unknown, ...args: any[]) {
  const started = performance.now();
  const text = typeof args[0] === 'string' ? args[0] : args[0]?.text;
  // pg-pool's query (the queue's prepared statements) passes a callback and gets no promise.
  const callback = args.at(-1);
  if (typeof text === 'string' && typeof callback === 'function')
    args[args.length - 1] = (error: unknown, answer: { rows?: unknown[] }) => {
      if (!error) record(text, started, answer?.rows?.length ?? 0);
      callback(error, answer);
    };
  const result = query.apply(this, args);
  if (typeof text !== 'string' || !result || typeof result.then !== 'function') return result;
  return result.then((answer: { rows?: unknown[] }) => {
    record(text, started, answer?.rows?.length ?? 0);
    return answer;
  });
};

if (out) {
  process.on('exit', () => {
    const rows = [...totals]
      .sort((a, b) => b[1].ms - a[1].ms)
      .map(([sql, t]) => ({
        ms: Math.round(t.ms),
        calls: t.calls,
        usPerCall: Math.round((t.ms * 1000) / t.calls),
        rows: t.rows,
        sql: sql.slice(0, 300),
      }));
    writeFileSync(out, JSON.stringify(rows, null, 1));
  });
}
