import type { Kysely } from 'kysely';

// When a delivery of an endpoint used up its attempts in the current run of failures (null outside one):
// the endpoint is disabled at its first failure once HERALD_DISABLE_AFTER has passed and this is set,
// not only when the failure that passes the window is itself a delivery's last.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('endpoints').addColumn('exhausted_at', 'bigint').execute();
}
