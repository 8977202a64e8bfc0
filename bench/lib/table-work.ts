import type pg from 'pg';
import { withClient } from './pg.js';
import { round } from './stats.js';

// What a drain writes to PostgreSQL, read from the database's own table counters before and after it: rows
// inserted, updated (HOT or not) and deleted, summed over the database's tables. The same reading serves
// Herald's database and graphile-worker's, each in its own database, so their figures compare like with like.

/** Herald's worker heartbeat: a row per worker process, updated on a timer rather than per delivery. */
export const LEFT_OUT_TABLES: readonly string[] = ['workers'];

export interface TableWork {
  inserted: number;
  /** Every update, HOT or not. */
  updated: number;
  /** Updates that stayed on the row's page and rewrote no index entry (PostgreSQL's heap-only tuples). */
  hotUpdated: number;
  deleted: number;
}

export interface TableWorkPerDelivery {
  /** Rows inserted, updated and deleted. */
  rowsWritten: number;
  inserted: number;
  hotUpdated: number;
  /** Updates that wrote a new entry into each of the table's indexes. */
  nonHotUpdated: number;
  deleted: number;
}

/** The counters of `view`: the database's totals so far, or (pg_stat_xact_…) this transaction's own. */
async function read(client: pg.Client, leaveOut: readonly string[], view = 'pg_stat_user_tables'): Promise<TableWork> {
  const { rows } = await client.query<{ ins: string; upd: string; hot: string; del: string }>(
    `select coalesce(sum(n_tup_ins), 0) as ins, coalesce(sum(n_tup_upd), 0) as upd,
            coalesce(sum(n_tup_hot_upd), 0) as hot, coalesce(sum(n_tup_del), 0) as del
     from ${view} where not (relname = any($1))`,
    [leaveOut],
  );
  const row = rows[0]!;
  return { inserted: Number(row.ins), updated: Number(row.upd), hotUpdated: Number(row.hot), deleted: Number(row.del) };
}

const same = (a: TableWork, b: TableWork) =>
  a.inserted === b.inserted && a.updated === b.updated && a.hotUpdated === b.hotUpdated && a.deleted === b.deleted;

/**
 * The database's counters once they hold still. A backend reports its table counters at most once a second,
 * and when it exits; one that goes idle less than a second after its last report holds the rest for 10 s
 * (PostgreSQL 15's PGSTAT_IDLE_INTERVAL). So read once the connections that did the work are closed: this
 * reads until two readings 1.1 s apart agree (a backend's exit is reported a moment after its client has
 * gone), ten times at most, and then the last reading stands.
 */
export function settledTableWork(url: string, leaveOut = LEFT_OUT_TABLES): Promise<TableWork> {
  return withClient(url, async (client) => {
    let last = await read(client, leaveOut);
    for (let i = 0; i < 10; i++) {
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const next = await read(client, leaveOut);
      if (same(next, last)) return next;
      last = next;
    }
    return last;
  });
}

/**
 * Makes a Herald backlog on PostgreSQL due at `runAt`, as setBacklogRunAt (lib/backlog.ts) does, and answers
 * the rows that update wrote, read inside its own transaction, for a drain's figures to leave out.
 */
export function makeDue(url: string, runAt: number, leaveOut = LEFT_OUT_TABLES): Promise<TableWork> {
  return withClient(url, async (client) => {
    await client.query('begin');
    try {
      await client.query('update deliveries set run_at = $1 where run_at is not null', [runAt]);
      const own = await read(client, leaveOut, 'pg_stat_xact_user_tables');
      await client.query('commit');
      return own;
    } catch (error) {
      await client.query('rollback');
      throw error;
    }
  });
}

/**
 * Vacuums Herald's deliveries. Making the backlog due rewrote every delivery's row (and holding it an hour
 * ahead before that, again) and left the old versions in their pages; vacuum takes them away, so that the
 * pages hold the room an emit leaves in them (the table's fillfactor), which a claim's HOT update uses.
 */
export function vacuumDeliveries(url: string): Promise<void> {
  return withClient(url, async (client) => void (await client.query('vacuum deliveries')));
}

/** Per delivery, the difference of two readings less the work named in `apart`. */
export function perDelivery(
  before: TableWork,
  after: TableWork,
  deliveries: number,
  apart?: TableWork,
): TableWorkPerDelivery {
  const diff = (key: keyof TableWork) => after[key] - before[key] - (apart?.[key] ?? 0);
  const each = (rows: number) => round(rows / deliveries, 2);
  const [inserted, updated, hotUpdated, deleted] = [
    diff('inserted'),
    diff('updated'),
    diff('hotUpdated'),
    diff('deleted'),
  ];
  return {
    rowsWritten: each(inserted + updated + deleted),
    inserted: each(inserted),
    hotUpdated: each(hotUpdated),
    nonHotUpdated: each(updated - hotUpdated),
    deleted: each(deleted),
  };
}
