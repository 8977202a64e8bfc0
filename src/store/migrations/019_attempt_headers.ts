import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // What each attempt sent and got back besides the bodies: the request's headers with sensitive values
  // redacted, and the answer's headers, each one `name: value` line per header (src/domain/headers.ts).
  // Null on the attempts made before.
  await db.schema.alterTable('attempts').addColumn('request_headers', 'text').execute();
  await db.schema.alterTable('attempts').addColumn('response_headers', 'text').execute();
}
