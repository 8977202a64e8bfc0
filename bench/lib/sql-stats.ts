import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';

// Preloaded into a service process with `npm run bench -- --sql-stats`: times every better-sqlite3
// statement by SQL text and writes the totals to $BENCH_SQL_STATS when the process exits. Tells which
// queries the embedded store spends its time on (a CPU profile shows them all as kysely's executeQuery).
const require = createRequire(import.meta.url);
const Database = require('better-sqlite3') as { prototype: { prepare(sql: string): any } };
const totals = new Map<string, { calls: number; ms: number; rows: number }>();
const out = process.env.BENCH_SQL_STATS;

const prepare = Database.prototype.prepare;
Database.prototype.prepare = function (this: unknown, sql: string) {
  const statement = prepare.call(this, sql);
  for (const method of ['run', 'all', 'get', 'iterate'] as const) {
    const original = statement[method];
    if (typeof original !== 'function') continue;
    statement[method] = function (this: unknown, ...args: unknown[]) {
      const started = performance.now();
      const result = original.apply(this, args);
      const entry = totals.get(sql) ?? { calls: 0, ms: 0, rows: 0 };
      entry.calls++;
      entry.ms += performance.now() - started;
      entry.rows += Array.isArray(result) ? result.length : 1;
      totals.set(sql, entry);
      return result;
    };
  }
  return statement;
};

if (out) {
  process.on('exit', () => {
    const rows = [...totals].sort((a, b) => b[1].ms - a[1].ms).map(([sql, t]) => ({ ms: Math.round(t.ms), calls: t.calls, usPerCall: Math.round((t.ms * 1000) / t.calls), rows: t.rows, sql: sql.slice(0, 300) }));
    writeFileSync(out, JSON.stringify(rows, null, 1));
  });
}
