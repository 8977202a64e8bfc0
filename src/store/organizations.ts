import { newId } from '../domain/ids.js';
import { recordChange } from './audit-log.js';
import { generateApiKey, hashApiKey, KEY_PREFIX } from '../domain/secrets.js';
import { STARTER_CATALOG } from '../domain/catalog.js';
import { FULL_POWER, type KeyPower } from '../domain/access.js';
import { SYSTEM_ACTOR, type Actor } from '../domain/audit.js';
import { liveFlag, toPage, type Page, type PageRequest, type Scope, type StoreContext } from './common.js';
import type { ApiKeyRow, OrganizationRow } from './schema.js';

/** How long an API-key lookup is reused (see Organizations.findKeyOwner). */
const KEY_CACHE_MS = 2_000;
/** Entries each key cache holds before it starts over. */
const KEY_CACHE_ENTRIES = 10_000;
/** How long a key this process issued or found counts as known (findKnownKeyOwner). */
const KNOWN_KEY_MS = 3_600_000;

export interface IssuedKey {
  row: ApiKeyRow;
  /** The plaintext key: returned once, never stored. */
  key: string;
}

export interface KeyOwner {
  keyId: string;
  scope: Scope;
  plan: string;
  power: KeyPower;
}

/** A key's power as its row keeps it. */
export const powerOf = (row: Pick<ApiKeyRow, 'role' | 'app_ids' | 'expires_at'>): KeyPower => ({
  role: row.role,
  appIds: row.app_ids === null ? null : (JSON.parse(row.app_ids) as string[]),
  expiresAt: row.expires_at,
});

export class Organizations {
  constructor(private readonly ctx: StoreContext) {}

  /** A new organization with its starter catalog in both environments. */
  async create(name: string, plan: string): Promise<OrganizationRow> {
    const now = this.ctx.now();
    const org: OrganizationRow = { id: newId('organization', now), name, plan, created_at: now };
    await this.ctx.db.transaction().execute(async (trx) => {
      await trx.insertInto('organizations').values(org).execute();
      await trx
        .insertInto('event_types')
        .values(
          [0, 1].flatMap((livemode) =>
            STARTER_CATALOG.map((entry) => ({
              org_id: org.id,
              livemode,
              name: entry.name,
              description: entry.description,
              version: 1,
              example_json: JSON.stringify(entry.example),
              archived: 0,
              deprecated: 0,
              created_at: now,
              updated_at: now,
            })),
          ),
        )
        .execute();
    });
    return org;
  }

  /**
   * Writes a master key reseal (`herald secrets reseal`) in the audit log of every organization's two
   * environments: the secrets of all of them were sealed again.
   */
  async recordReseal(actor: Actor, counts: { checked: number; resealed: number }): Promise<void> {
    const now = this.ctx.now();
    await this.ctx.db.transaction().execute(async (trx) => {
      for (const org of await trx.selectFrom('organizations').select('id').execute())
        for (const livemode of [false, true])
          await recordChange(trx, { orgId: org.id, livemode, actor }, now, {
            action: 'master_key.resealed',
            resource: 'master_key',
            resourceId: org.id,
            before: null,
            after: { endpoints_checked: counts.checked, endpoints_resealed: counts.resealed },
          });
    });
  }

  async get(id: string): Promise<OrganizationRow | undefined> {
    return this.ctx.db.selectFrom('organizations').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async list(): Promise<OrganizationRow[]> {
    return this.ctx.db.selectFrom('organizations').selectAll().orderBy('id').execute();
  }

  /** Changes an organization's plan (its rate limit); the change is in the audit log of both environments. */
  async setPlan(id: string, plan: string, actor: Actor = SYSTEM_ACTOR): Promise<boolean> {
    this.forgetKeyOwners();
    const changed = await this.ctx.db.transaction().execute(async (trx) => {
      const before = await trx.selectFrom('organizations').selectAll().where('id', '=', id).executeTakeFirst();
      if (!before) return false;
      await trx.updateTable('organizations').set({ plan }).where('id', '=', id).execute();
      const now = this.ctx.now();
      for (const livemode of [false, true])
        await recordChange(trx, { orgId: id, livemode, actor }, now, {
          action: 'organization.updated',
          resource: 'organization',
          resourceId: id,
          before,
          after: { ...before, plan },
        });
      return true;
    });
    this.forgetKeyOwners();
    return changed;
  }

  /** A new key of `power` (the caller has checked it may make one); its plaintext is returned once. */
  async issueKey(scope: Scope, name: string, power: KeyPower = FULL_POWER): Promise<IssuedKey> {
    const now = this.ctx.now();
    const key = generateApiKey(scope.livemode);
    const row: ApiKeyRow = {
      id: newId('apiKey', now),
      org_id: scope.orgId,
      livemode: liveFlag(scope),
      name,
      key_hash: hashApiKey(key),
      created_at: now,
      revoked_at: null,
      role: power.role,
      app_ids: power.appIds === null ? null : JSON.stringify(power.appIds),
      expires_at: power.expiresAt,
    };
    await this.ctx.db.transaction().execute(async (trx) => {
      await trx.insertInto('api_keys').values(row).execute();
      await recordChange(trx, scope, now, {
        action: 'api_key.created',
        resource: 'api_key',
        resourceId: row.id,
        before: null,
        after: row,
      });
    });
    this.knowKey(row.key_hash, Date.now());
    return { row, key };
  }

  /**
   * Recent answers of findKeyOwner by key hash, for KEY_CACHE_MS: every request authenticates, and the
   * lookup (hash, query, join) costs a tenth of an emit. Revoking a key or changing a plan in this
   * process clears it; other processes see the change within KEY_CACHE_MS.
   */
  private readonly keyCache = new Map<string, { owner: KeyOwner | undefined; until: number }>();
  /**
   * The same for keys that opened nothing, apart: anyone can present unknown keys (they are not rate
   * limited), and a flood of them filling one shared cache would push the real keys out with it.
   */
  private readonly unknownKeyCache = new Map<string, { owner: KeyOwner | undefined; until: number }>();
  /**
   * Hashes of keys issued or found by this process within KNOWN_KEY_MS, and until when. Only issuing a key
   * or a lookup that found one adds to it, so guessed keys never do; a key revoked since is looked up and
   * found revoked.
   */
  private readonly knownKeys = new Map<string, number>();
  /** Counts forgetKeyOwners calls: a lookup that overlapped one may have read the row as it was before. */
  private keyCacheGeneration = 0;

  /**
   * Empties the key cache, before a change to keys or plans and again once it is written: a lookup that
   * read the row before the change and answers after it must not cache that answer (findKeyOwner).
   */
  private forgetKeyOwners(): void {
    this.keyCache.clear();
    this.unknownKeyCache.clear();
    this.keyCacheGeneration++;
  }

  /** Who a presented key belongs to, or undefined when it is unknown or revoked. */
  async findKeyOwner(key: string): Promise<KeyOwner | undefined> {
    const livemode = key.startsWith(KEY_PREFIX.live);
    if (!livemode && !key.startsWith(KEY_PREFIX.test)) return undefined;
    // Keyed by hash, so the cache never holds presented keys in plaintext.
    const keyHash = hashApiKey(key);
    const now = Date.now();
    const cached = this.keyCache.get(keyHash) ?? this.unknownKeyCache.get(keyHash);
    if (cached && cached.until > now) return cached.owner;
    const generation = this.keyCacheGeneration;
    const owner = await this.readKeyOwner(keyHash, livemode);
    if (owner) this.knowKey(keyHash, now);
    if (generation !== this.keyCacheGeneration) return owner;
    const cache = owner ? this.keyCache : this.unknownKeyCache;
    if (cache.size >= KEY_CACHE_ENTRIES) cache.clear();
    cache.set(keyHash, { owner, until: now + KEY_CACHE_MS });
    return owner;
  }

  private knowKey(keyHash: string, now: number): void {
    if (this.knownKeys.size >= KEY_CACHE_ENTRIES) this.knownKeys.clear();
    this.knownKeys.set(keyHash, now + KNOWN_KEY_MS);
  }

  /**
   * findKeyOwner for a caller past its failed-authentication limit (api/auth.ts): the key cache answers, and
   * a key issued or found by this process within KNOWN_KEY_MS is looked up; any other key is
   * undefined without a lookup, so a flood of guessed keys costs the database nothing.
   */
  async findKnownKeyOwner(key: string): Promise<KeyOwner | undefined> {
    const keyHash = hashApiKey(key);
    const now = Date.now();
    const cached = this.keyCache.get(keyHash);
    if (cached && cached.until > now) return cached.owner;
    const knownUntil = this.knownKeys.get(keyHash);
    return knownUntil !== undefined && knownUntil > now ? this.findKeyOwner(key) : undefined;
  }

  /**
   * The database read behind findKeyOwner: the key's owner, or undefined for an unknown, revoked or
   * other-environment key. A field, so that a test can count or hold the reads the caches spare.
   */
  readKeyOwner = async (keyHash: string, livemode: boolean): Promise<KeyOwner | undefined> => {
    const row = await this.ctx.db
      .selectFrom('api_keys')
      .innerJoin('organizations', 'organizations.id', 'api_keys.org_id')
      .select([
        'api_keys.id',
        'api_keys.org_id',
        'api_keys.livemode',
        'api_keys.revoked_at',
        'api_keys.role',
        'api_keys.app_ids',
        'api_keys.expires_at',
        'organizations.plan',
      ])
      .where('api_keys.key_hash', '=', keyHash)
      .executeTakeFirst();
    if (!row || row.revoked_at !== null || Boolean(row.livemode) !== livemode) return undefined;
    return { keyId: row.id, scope: { orgId: row.org_id, livemode }, plan: row.plan, power: powerOf(row) };
  };

  async listKeys(scope: Scope, page: PageRequest): Promise<Page<ApiKeyRow>> {
    let query = this.ctx.db
      .selectFrom('api_keys')
      .selectAll()
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope));
    if (page.cursor) query = query.where('id', '<', page.cursor);
    const rows = await query
      .orderBy('id', 'desc')
      .limit(page.limit + 1)
      .execute();
    return toPage(rows, page.limit);
  }

  async getKey(scope: Scope, id: string): Promise<ApiKeyRow | undefined> {
    return this.ctx.db
      .selectFrom('api_keys')
      .selectAll()
      .where('id', '=', id)
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope))
      .executeTakeFirst();
  }

  /** Revokes a key of this scope; returns the row as it now is, or undefined when there is no such key. */
  async revokeKey(scope: Scope, id: string): Promise<ApiKeyRow | undefined> {
    this.forgetKeyOwners();
    const now = this.ctx.now();
    await this.ctx.db.transaction().execute(async (trx) => {
      const revoked = await trx
        .updateTable('api_keys')
        .set({ revoked_at: now })
        .where('id', '=', id)
        .where('org_id', '=', scope.orgId)
        .where('livemode', '=', liveFlag(scope))
        .where('revoked_at', 'is', null)
        .returningAll()
        .executeTakeFirst();
      if (revoked)
        await recordChange(trx, scope, now, {
          action: 'api_key.revoked',
          resource: 'api_key',
          resourceId: id,
          before: { ...revoked, revoked_at: null },
          after: revoked,
        });
    });
    this.forgetKeyOwners();
    return this.getKey(scope, id);
  }
}
