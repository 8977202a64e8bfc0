import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // A key's role (src/domain/access.ts), the applications it is limited to (a JSON list of `app_…` ids;
  // null: every application) and when it stops working (null: never). Keys made before keep today's
  // power: admin, every application, no expiry.
  await db.schema
    .alterTable('api_keys')
    .addColumn('role', 'text', (c) => c.notNull().defaultTo('admin'))
    .execute();
  await db.schema.alterTable('api_keys').addColumn('app_ids', 'text').execute();
  await db.schema.alterTable('api_keys').addColumn('expires_at', 'bigint').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  // Without these columns every key is an admin key for every application that never expires: a key that
  // was limited is revoked rather than let loose.
  await db
    .updateTable('api_keys')
    .set({ revoked_at: Date.now() })
    .where('revoked_at', 'is', null)
    .where((eb) => eb.or([eb('role', '!=', 'admin'), eb('app_ids', 'is not', null), eb('expires_at', 'is not', null)]))
    .execute();
  for (const column of ['expires_at', 'app_ids', 'role'])
    await db.schema.alterTable('api_keys').dropColumn(column).execute();
}
