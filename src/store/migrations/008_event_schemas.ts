import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // A catalog entry's JSON Schema (draft 2020-12) as JSON text, or null: entries without one accept any
  // payload object, so existing entries keep accepting what they accepted.
  await db.schema.alterTable('event_types').addColumn('schema_json', 'text').execute();
}
