import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // Portal tokens are kept as their SHA-256, like API keys: a copy of the database opens no portal. The
  // column is renamed (its unique index follows) and each stored token replaced by its hash, so existing
  // links keep working; portal_path is shown only by application create and rotate-portal-path.
  await db.schema.alterTable('applications').renameColumn('portal_token', 'portal_token_hash').execute();
  const rows = await db.selectFrom('applications').select(['id', 'portal_token_hash']).execute();
  for (const row of rows) {
    const hash = createHash('sha256').update(row.portal_token_hash).digest('hex');
    await db.updateTable('applications').set({ portal_token_hash: hash }).where('id', '=', row.id).execute();
  }
}
