import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // One row per running delivery worker, written every second (src/delivery/heartbeat.ts): a worker whose
  // row stops moving has died, and its claimed attempts are handed back long before their lease ends.
  await db.schema
    .createTable('workers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('beat_at', 'bigint', (c) => c.notNull())
    .execute();
}
