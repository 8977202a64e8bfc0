import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // Secrets rotated out before the previous one and still in their grace: a sealed JSON list, and the
  // latest end among them (so the list is opened only while one of them is valid). The previous secret
  // keeps its own columns, which processes of the version before read as they did.
  await db.schema.alterTable('endpoints').addColumn('earlier_secrets_sealed', 'text').execute();
  await db.schema.alterTable('endpoints').addColumn('earlier_valid_until', 'bigint').execute();
  // When a delivery of the endpoint used up its attempts in the current run of failures (null outside
  // one): the endpoint is disabled at its first failure once HERALD_DISABLE_AFTER has passed and this is
  // set, not only when the failure that passes the window is itself a delivery's last.
  await db.schema.alterTable('endpoints').addColumn('exhausted_at', 'bigint').execute();
}
