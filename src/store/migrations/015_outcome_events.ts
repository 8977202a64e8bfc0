import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // Operational events of outcomes that PostgreSQL records in one statement (src/store/queue/postgres.ts):
  // the statement stores each event with the outcomes that raise it, and they are raised from here right
  // after, or by whichever worker reaps the process that stopped in between. Committed with the outcomes,
  // an event is lost only together with them; a row is deleted in the transaction that raises it.
  await db.schema
    .createTable('outcome_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}
