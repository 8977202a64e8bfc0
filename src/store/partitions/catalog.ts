import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.js';
import { type PartitionedTable, rangeOfBound, type TimeRange } from '../../domain/partitions.js';

// What PostgreSQL's catalog and the partitions themselves say of the partitioned history: the partitions of
// a table, and where the queued deliveries begin. Read by the partition keeping (postgres.ts) and by the
// queue (src/store/queue/postgres.ts), which imports nothing else of this folder.

/** A partition of a table and its range of times; a null range: the default partition. */
export interface Partition {
  name: string;
  range: TimeRange | null;
}

/** The partitions of `table`, ranges first by their start (the legacy one, unbounded, first), the default last. */
export async function partitionsOf(db: Kysely<Database>, table: PartitionedTable['table']): Promise<Partition[]> {
  const { rows } = await sql<{ name: string; bound: string }>`
    select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound
    from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
    where p.relname = ${table} and p.relnamespace = current_schema()::regnamespace`.execute(db);
  const partitions = rows.map((row) => ({ name: row.name, range: rangeOfBound(row.bound) }));
  const start = (p: Partition) => (p.range === null ? Number.POSITIVE_INFINITY : (p.range.from ?? -1));
  return partitions.sort((a, b) => start(a) - start(b));
}

/**
 * Where the queued deliveries (`run_at` set) begin: the start (ms) of the oldest deliveries partition that
 * holds one; null when no start can be given (the legacy table or the default partition holds one, or the
 * tables are not partitioned); +Infinity when none is queued. One statement probes each partition's due
 * index, the default's first and then oldest first, and stops at the first that holds a queued delivery.
 */
export async function queuedFrom(db: Kysely<Database>): Promise<number | null> {
  const partitions = await partitionsOf(db, 'deliveries');
  if (partitions.length === 0) return null;
  // The default partition's rows may have any id: probed first, and a queued one there bounds nothing.
  const order = [...partitions.filter((p) => p.range === null), ...partitions.filter((p) => p.range !== null)];
  const probes = order.map(
    (p, i) => sql`select ${sql.lit(i)} as i where exists (select 1 from ${sql.table(p.name)} where run_at is not null)`,
  );
  const { rows } = await sql<{
    i: number;
  }>`select i from (${sql.join(probes, sql` union all `)}) probes limit 1`.execute(db);
  if (rows.length === 0) return Number.POSITIVE_INFINITY;
  return order[rows[0]!.i]!.range?.from ?? null;
}
