import { book } from './queue/index.js';
import type { StoreContext } from './common.js';
import { defaultRows } from './partitions/postgres.js';

// What the metrics' store-read gauges read (src/metrics/store-gauges.ts): small aggregate queries, read
// at most every few seconds by a scrape and never by a request. Both are plain aggregates that kysely writes
// the same way for SQLite and PostgreSQL.

export interface QueueReading {
  /** Attempts due now: `run_at` reached, neither leased (a claim moves run_at to the lease end) nor parked. */
  due: number;
  /** The earliest `run_at` among them (null: none due). */
  oldestRunAt: number | null;
}

export class MetricsReads {
  constructor(private readonly ctx: StoreContext) {}

  /**
   * The due attempts and the earliest of them (the queue book's book.dueReading).
   */
  async queue(now = this.ctx.now()): Promise<QueueReading> {
    return book.dueReading(this.ctx.db, now);
  }

  /** Endpoints per status (active, failing, disabled), over every organization and environment. */
  async endpointsByStatus(): Promise<Map<string, number>> {
    const rows = await this.ctx.db
      .selectFrom('endpoints')
      .select((eb) => ['status', eb.fn.countAll().as('count')])
      .groupBy('status')
      .execute();
    return new Map(rows.map((row) => [row.status, Number(row.count)]));
  }

  /** PostgreSQL: rows in the history tables' default partitions; 0 on the embedded store, which has none. */
  async defaultPartitionRows(): Promise<number> {
    return this.ctx.dialect === 'postgres' ? defaultRows(this.ctx.db) : 0;
  }
}
