import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.js';

/**
 * Gives a partition's indexes their partitioned index's name with `suffix` (`deliveries_due_p20261203t0000`):
 * plans then name the index a read uses, whichever partition it is in.
 */
export async function nameChildIndexes(db: Kysely<Database>, partition: string, suffix: string): Promise<void> {
  const { rows } = await sql<{ child: string; parent: string }>`
    select c.relname as child, p.relname as parent
    from pg_index x
    join pg_class c on c.oid = x.indexrelid
    join pg_inherits i on i.inhrelid = x.indexrelid
    join pg_class p on p.oid = i.inhparent
    where x.indrelid = ${partition}::regclass`.execute(db);
  for (const { child, parent } of rows) {
    const wanted = `${parent}_${suffix}`;
    if (child !== wanted) await sql`alter index ${sql.table(child)} rename to ${sql.table(wanted)}`.execute(db);
  }
}
