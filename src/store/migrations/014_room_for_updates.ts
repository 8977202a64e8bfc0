import { type Kysely, PostgresAdapter, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // Attempt ids are made from the time the attempt finished, its created_at (src/domain/ids.ts, idFrom),
  // so the retention purge finds old attempts through the primary key; an index of their own on
  // created_at cost every recorded attempt one more insertion for nothing.
  await db.schema.dropIndex('attempts_by_age').execute();
  // PostgreSQL: leave a fifth of each new page of deliveries free, so that recording an outcome (which
  // changes no indexed column of a delivery) can write the row's new version on its own page and skip
  // every index (a HOT update). Full pages make each such update insert into all four of the table's
  // indexes. SQLite updates rows in place and has no such setting.
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`alter table deliveries set (fillfactor = 80)`.execute(db);
}
