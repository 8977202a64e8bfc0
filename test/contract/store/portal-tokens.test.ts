import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { openStore } from '../../support/store.js';
import { createTestDatabase } from '../../support/service.js';
import { MIGRATIONS, migrate, openPostgres, openSqlite } from '../../../src/store/db.js';
import { Store } from '../../../src/store/index.js';
import { loadConfig } from '../../../src/config.js';
import { BASE_ENV } from '../../support/child.js';

// Portal tokens are stored as their SHA-256, like API keys: the token opens the portal, its hash does not,
// and a database from before the change keeps its links working.

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

test('an application stores its portal token hashed; the token finds it and the hash does not', async (t) => {
  const { store, scope } = await openStore(t);
  const app = await store.applications.create(scope, { name: 'hashed' });
  const [row] = await store.ctx.db.selectFrom('applications').selectAll().where('id', '=', app.id).execute();
  assert.equal(row!.portal_token_hash, sha256(app.portalToken));
  assert.ok(!JSON.stringify(row).includes(app.portalToken), 'the token itself is nowhere in the row');
  assert.equal((await store.applications.getByPortalToken(app.portalToken))?.id, app.id);
  assert.equal(await store.applications.getByPortalToken(row!.portal_token_hash), undefined);

  const rotated = await store.applications.rotatePortalToken(scope, app.id);
  assert.notEqual(rotated!.portalToken, app.portalToken);
  assert.equal((await store.applications.getByPortalToken(rotated!.portalToken))?.id, app.id);
  assert.equal(await store.applications.getByPortalToken(app.portalToken), undefined, 'the old link ends');
});

test('migrating a store made before hashing keeps its portal links working and forgets the tokens', async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  const before = Object.fromEntries(Object.entries(MIGRATIONS).filter(([name]) => name < '006'));
  const opened = database.env.HERALD_DATABASE_URL
    ? openPostgres(database.env.HERALD_DATABASE_URL, 2)
    : openSqlite(database.env.HERALD_DATA_DIR!);
  try {
    await migrate(opened.db, before);
    const token = 'a-portal-token-made-before-hashing-0123456789abcdef';
    await sql`insert into organizations (id, name, plan, created_at) values ('org_old', 'old', 'unlimited', 1)`.execute(
      opened.db,
    );
    await sql`insert into applications (id, org_id, livemode, name, uid, portal_token, created_at, updated_at)
      values ('app_old', 'org_old', 0, 'old', null, ${token}, 1, 1)`.execute(opened.db);
    await migrate(opened.db);
    const { rows } = await sql<{ portal_token_hash: string }>`select portal_token_hash from applications`.execute(
      opened.db,
    );
    assert.deepEqual(rows, [{ portal_token_hash: sha256(token) }]);

    const store = await Store.open(loadConfig({ ...BASE_ENV, ...database.env }));
    t.after(() => store.close());
    assert.equal((await store.applications.getByPortalToken(token))?.id, 'app_old');
  } finally {
    await opened.close();
  }
});
