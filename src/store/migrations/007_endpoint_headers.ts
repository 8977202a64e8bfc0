import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // An endpoint's own headers, sent with every request to it: a JSON object sealed with HERALD_SECRET_KEY
  // like signing secrets (an Authorization value is a credential); null when it has none.
  await db.schema.alterTable('endpoints').addColumn('headers_sealed', 'text').execute();
}
