import Database from 'better-sqlite3';
import pg from 'pg';
import { sql } from 'kysely';
import type { OpenedDatabase } from '../../src/store/db.js';
import type { TestService } from './service.js';

// What a store does for the work a test makes, read from the database's own counters and from the
// statements the service's process sends, never from a clock: statements, and rows inserted, updated (on
// PostgreSQL: HOT and not) and deleted. The service runs in the test's process, so its statements pass
// through the prototypes wrapped here.

export interface StoreWork {
  statements: number;
  inserted: number;
  /** Rows updated in place of the same page with no index rewritten (PostgreSQL's HOT); 0 on SQLite. */
  hotUpdated: number;
  /** Rows updated otherwise (every index of the row rewritten); on SQLite every update. */
  otherUpdated: number;
  deleted: number;
  /** SQLite: rows inserted, updated or deleted together (it keeps no count per kind). */
  changed: number;
}

let statements = 0;
let wrapped = false;

/** Counts every statement the process sends to either database from now on (once per process). */
function countStatements(): void {
  if (wrapped) return;
  wrapped = true;
  const client = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const query = client.query;
  client.query = function (this: unknown, ...args: unknown[]) {
    statements++;
    return query.apply(this, args);
  };
  const probe = new Database(':memory:');
  const statement = Object.getPrototypeOf(probe.prepare('select 1')) as Record<string, (...args: unknown[]) => unknown>;
  for (const name of ['run', 'all', 'get', 'iterate']) {
    const original = statement[name]!;
    statement[name] = function (this: unknown, ...args: unknown[]) {
      statements++;
      return original.apply(this, args);
    };
  }
  probe.close();
}

/** The counters now: statements sent so far, and the database's row counts (tables named, or all). */
export async function storeWork(service: TestService, leaveOut: readonly string[] = ['workers']): Promise<StoreWork> {
  countStatements();
  const sent = statements;
  const db = service.store.ctx.db;
  if (service.store.ctx.dialect === 'sqlite') {
    const { rows } = await sql<{ n: number }>`select total_changes() as n`.execute(db);
    return { statements: sent, inserted: 0, hotUpdated: 0, otherUpdated: 0, deleted: 0, changed: rows[0]!.n };
  }
  const { rows } = await sql<{ ins: string; upd: string; hot: string; del: string }>`
    select coalesce(sum(n_tup_ins), 0) as ins, coalesce(sum(n_tup_upd), 0) as upd,
           coalesce(sum(n_tup_hot_upd), 0) as hot, coalesce(sum(n_tup_del), 0) as del
    from pg_stat_user_tables where not (relname = any(${leaveOut as string[]}))`.execute(db);
  const row = rows[0]!;
  return {
    statements: sent,
    inserted: Number(row.ins),
    hotUpdated: Number(row.hot),
    otherUpdated: Number(row.upd) - Number(row.hot),
    deleted: Number(row.del),
    changed: Number(row.ins) + Number(row.upd) + Number(row.del),
  };
}

/**
 * PostgreSQL's table counters reach the view when a backend reports: at the end of a transaction at least a
 * second after its previous report, else after it has been idle 10 s (PGSTAT_IDLE_INTERVAL). So a second
 * after the work, one statement on every idle connection of the service's pools makes each report what it
 * holds back; a connection busy at that moment reports when its own statement ends, past that second too.
 */
const REPORT_INTERVAL_MS = 1_100;

async function reportHeldCounts(service: TestService): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, REPORT_INTERVAL_MS));
  // The store keeps its pools to itself; a test reaches in.
  const { opened } = service.store as unknown as { opened: OpenedDatabase };
  for (const pool of [opened.pool, opened.queuePool]) {
    if (!pool) continue;
    const clients = await Promise.all(Array.from({ length: pool.idleCount }, () => pool.connect()));
    try {
      await Promise.all(clients.map((client) => client.query('select 1')));
    } finally {
      for (const client of clients) client.release();
    }
  }
}

/**
 * The store's counters once the work before has reached them: on PostgreSQL after every connection has
 * reported (reportHeldCounts), then read until two readings agree on the rows changed. The statements the
 * idle worker's polls add meanwhile are a few against a thousand deliveries.
 */
export async function settledWork(service: TestService): Promise<StoreWork> {
  if (service.store.ctx.dialect === 'postgres') {
    await reportHeldCounts(service);
    await insertsReported(service);
  }
  let last = await storeWork(service);
  for (let i = 0; i < 20; i++) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    const next = await storeWork(service);
    if (next.changed === last.changed) return next;
    last = next;
  }
  return last;
}

/** Tables a test's rows are inserted into and never deleted from while it measures. */
const INSERTED_ONLY = ['messages', 'payloads', 'deliveries', 'attempts'] as const;

/**
 * Waits (up to 15 s: an idle backend reports within 10 s) until PostgreSQL's counters hold every row
 * inserted into INSERTED_ONLY: a backend the pokes above missed (busy at that moment) may still hold some
 * back, which would then count in the next reading, as if the work under test had inserted them.
 */
async function insertsReported(service: TestService): Promise<void> {
  const db = service.store.ctx.db;
  for (let i = 0; i < 50; i++) {
    const { rows } = await sql<{ behind: boolean }>`
      select bool_or(s.n_tup_ins < t.n) as behind from pg_stat_user_tables s
      join (${sql.join(
        INSERTED_ONLY.map((table) => sql`select ${table}::text as relname, count(*) as n from ${sql.table(table)}`),
        sql` union all `,
      )}) t on t.relname = s.relname`.execute(db);
    if (!rows[0]?.behind) return;
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

const KEYS = ['statements', 'inserted', 'hotUpdated', 'otherUpdated', 'deleted', 'changed'] as const;

/**
 * Makes every queued attempt due now, and answers the store work of doing so (the statements it sent and
 * the rows it updated, which PostgreSQL's counters then hold beside the work under test).
 */
export async function makeDue(service: TestService): Promise<StoreWork> {
  countStatements();
  const sentBefore = statements;
  const db = service.store.ctx.db;
  const now = Date.now();
  if (service.store.ctx.dialect === 'sqlite') {
    const { numAffectedRows } = await sql`update deliveries set run_at = ${now} where run_at is not null`.execute(db);
    const rows = Number(numAffectedRows ?? 0);
    return {
      statements: statements - sentBefore,
      inserted: 0,
      hotUpdated: 0,
      otherUpdated: 0,
      deleted: 0,
      changed: rows,
    };
  }
  const own = await db.transaction().execute(async (trx) => {
    await sql`update deliveries set run_at = ${now} where run_at is not null`.execute(trx);
    const { rows } = await sql<{ upd: string; hot: string }>`
      select coalesce(sum(n_tup_upd), 0) as upd, coalesce(sum(n_tup_hot_upd), 0) as hot from pg_stat_xact_user_tables
      where relid = 'deliveries'::regclass or relid in (select relid from pg_partition_tree('deliveries'))`.execute(
      trx,
    );
    return { upd: Number(rows[0]!.upd), hot: Number(rows[0]!.hot) };
  });
  // The update left a dead version of every row beside its new one; vacuum takes them away, so that the
  // pages have the room an emit leaves in them (fillfactor), which the claims' HOT updates use.
  await sql`vacuum deliveries`.execute(db);
  return {
    statements: statements - sentBefore,
    inserted: 0,
    hotUpdated: own.hot,
    otherUpdated: own.upd - own.hot,
    deleted: 0,
    changed: own.upd,
  };
}

/** Per unit of work, the difference of two readings less the work named in `apart`. */
export function perUnit(before: StoreWork, after: StoreWork, units: number, apart?: StoreWork): StoreWork {
  const each = (key: (typeof KEYS)[number]) => (after[key] - before[key] - (apart?.[key] ?? 0)) / units;
  return {
    statements: each('statements'),
    inserted: each('inserted'),
    hotUpdated: each('hotUpdated'),
    otherUpdated: each('otherUpdated'),
    deleted: each('deleted'),
    changed: each('changed'),
  };
}
