import type { StoreContext } from './common.js';

// What the metrics' store-read gauges read (src/metrics/store-gauges.ts): two small aggregate queries, read
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
   * The due attempts and the earliest of them, read through the index on (run_at, id). Leased tasks
   * (run_at at their lease end), paused ones (run_at at the pause end) and parked FIFO ones (run_at at
   * PARKED_AT, src/domain/fifo.ts) lie in the future, so `run_at <= now` is exactly what a claim would take.
   */
  async queue(now = this.ctx.now()): Promise<QueueReading> {
    const row = await this.ctx.db
      .selectFrom('delivery_tasks')
      .select((eb) => [eb.fn.countAll().as('due'), eb.fn.min('run_at').as('oldest')])
      .where('run_at', '<=', now)
      .executeTakeFirst();
    return { due: Number(row?.due ?? 0), oldestRunAt: row?.oldest == null ? null : Number(row.oldest) };
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
}
