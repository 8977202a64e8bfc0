import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // An endpoint's rate limit keeps one value (src/domain/rate.ts): when its next start may be, in
  // microseconds, shared by every worker. The calendar second's counters it replaces go; what they held
  // is a second old at most, so nothing of it is carried over.
  await sql`delete from endpoint_rates`.execute(db);
  for (const column of ['window_start', 'used', 'granted'])
    await db.schema.alterTable('endpoint_rates').dropColumn(column).execute();
  await db.schema
    .alterTable('endpoint_rates')
    .addColumn('tat_us', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
}
