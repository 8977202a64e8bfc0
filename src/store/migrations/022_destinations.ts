import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // An endpoint's kind (src/domain/destinations.ts): `http`, or a broker or bucket its messages are
  // published to. For the others, `destination` holds the checked settings as JSON with the names of the
  // secrets stored, and `destination_sealed` those secrets (the URL's password, a token, a key) as JSON
  // sealed with HERALD_SECRET_KEY; `url` is kept without its password.
  await db.schema
    .alterTable('endpoints')
    .addColumn('type', 'text', (c) => c.notNull().defaultTo('http'))
    .execute();
  await db.schema.alterTable('endpoints').addColumn('destination', 'text').execute();
  await db.schema.alterTable('endpoints').addColumn('destination_sealed', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  // A schema without destinations would send to a broker's URL as HTTP: those endpoints are disabled.
  await db.updateTable('endpoints').set({ status: 'disabled' }).where('type', '<>', 'http').execute();
  await db.schema.alterTable('endpoints').dropColumn('destination_sealed').execute();
  await db.schema.alterTable('endpoints').dropColumn('destination').execute();
  await db.schema.alterTable('endpoints').dropColumn('type').execute();
}
