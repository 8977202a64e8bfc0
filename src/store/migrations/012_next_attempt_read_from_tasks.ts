import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // A delivery's next attempt time is read from its queued tasks (src/store/queue/book.ts, nextAttemptAt),
  // so no write has a second row to keep in step with them.
  await db.schema.alterTable('deliveries').dropColumn('next_attempt_at').execute();
}
