import { Gauge, type Registry } from 'prom-client';
import type { MetricsReads } from '../store/metrics.js';

// Gauges read from the store: the due queue, endpoints per status and (PostgreSQL) the rows no partition
// range holds. They are read when scraped and at
// most every READ_EVERY_MS (a scrape within that reuses the last reading), so scrapes cost the database
// a few small queries at most every few seconds, and no request (an emit) ever waits on them.

/** Readings younger than this are reused. */
export const READ_EVERY_MS = 5_000;

/** Statuses always shown, even at zero: an alert on disabled endpoints needs the series to exist. */
const ENDPOINT_STATUSES = ['active', 'failing', 'disabled'];

interface Reading {
  at: number;
  due: number;
  oldestAgeSeconds: number;
  endpoints: Map<string, number>;
  defaultPartitionRows: number;
}

export class StoreGauges {
  private reading: Reading | null = null;
  private reading$: Promise<Reading | null> | null = null;

  constructor(
    private readonly reads: MetricsReads,
    registers: Registry[],
  ) {
    const self = this;
    new Gauge({
      name: 'herald_queue_due_attempts',
      help: 'Delivery attempts due now and not yet claimed (read from the store at most every 5 s)',
      registers,
      async collect() {
        const reading = await self.current();
        if (reading) this.set(reading.due);
      },
    });
    new Gauge({
      name: 'herald_queue_oldest_due_age_seconds',
      help: 'How long the earliest due, unclaimed attempt has been due (0: none due; read at most every 5 s)',
      registers,
      async collect() {
        const reading = await self.current();
        if (reading) this.set(reading.oldestAgeSeconds);
      },
    });
    new Gauge({
      name: 'herald_endpoints',
      help: 'Endpoints per status, all organizations and environments (read from the store at most every 5 s)',
      labelNames: ['status'] as const,
      registers,
      async collect() {
        const reading = await self.current();
        if (!reading) return;
        this.reset();
        for (const status of ENDPOINT_STATUSES) this.set({ status }, 0);
        for (const [status, count] of reading.endpoints) this.set({ status }, count);
      },
    });
    new Gauge({
      name: 'herald_default_partition_rows',
      help: "PostgreSQL: rows in the history tables' default partitions, which hold what no partition's range covers (0 while partitions are made ahead; always 0 on the embedded store)",
      registers,
      async collect() {
        const reading = await self.current();
        if (reading) this.set(reading.defaultPartitionRows);
      },
    });
  }

  /**
   * The last reading, read again first when it is older than READ_EVERY_MS; the gauges of one scrape share
   * one read. A read that fails leaves the last values in place (null before the first), and the next
   * scrape tries again.
   */
  private current(): Promise<Reading | null> {
    if (this.reading && Date.now() - this.reading.at < READ_EVERY_MS) return Promise.resolve(this.reading);
    this.reading$ ??= this.read().finally(() => {
      this.reading$ = null;
    });
    return this.reading$;
  }

  private async read(): Promise<Reading | null> {
    const at = Date.now();
    try {
      const [queue, endpoints, defaultPartitionRows] = await Promise.all([
        this.reads.queue(at),
        this.reads.endpointsByStatus(),
        this.reads.defaultPartitionRows(),
      ]);
      const oldestAgeSeconds = queue.oldestRunAt === null ? 0 : Math.max(0, at - queue.oldestRunAt) / 1000;
      this.reading = { at, due: queue.due, oldestAgeSeconds, endpoints, defaultPartitionRows };
    } catch {
      // Kept as last read; the scrape still serves every other metric.
    }
    return this.reading;
  }
}
