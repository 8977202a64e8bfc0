import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.js';
import { type PartitionedTable, rangeOfBound, type TimeRange } from '../../domain/partitions.js';

// What PostgreSQL's catalog says of the partitioned history: the partitions of a table. Read by the
// partition keeping (postgres.ts) and by the queue (src/store/queue/postgres.ts: where the queued deliveries
// begin), which imports nothing else of this folder (postgres.ts imports the queue's book).

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
