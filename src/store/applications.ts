import { isUniqueViolation } from './errors.js';
import { newId, randomToken } from '../domain/ids.js';
import { hashToken } from '../domain/secrets.js';
import { liveFlag, toPage, type Page, type PageRequest, type Scope, type StoreContext } from './common.js';
import type { ApplicationRow } from './schema.js';
import { forgetEndpoints } from './endpoints.js';
import { book } from './queue/index.js';
import { endpointOccurrence } from '../domain/operational.js';
import { type RaisePolicy, raiseOccurrences } from './operational.js';
import { recordChange } from './audit-log.js';

export class UidTakenError extends Error {
  constructor(uid: string) {
    super(`an application with uid "${uid}" already exists`);
  }
}

export class Applications {
  constructor(
    private readonly ctx: StoreContext,
    private readonly raise: RaisePolicy,
    private readonly onQueued: () => void = () => {},
  ) {}

  /**
   * Creates an application; throws UidTakenError when the uid is in use in this environment. Its portal
   * token comes back with it, once: only the token's hash is stored.
   */
  async create(
    scope: Scope,
    input: { name: string; uid?: string | undefined; metadata?: Record<string, string> | undefined },
  ): Promise<ApplicationRow & { portalToken: string }> {
    const now = this.ctx.now();
    // 32 random bytes: the portal path is a bearer credential for this one application.
    const portalToken = randomToken(32);
    const row: ApplicationRow = {
      id: newId('application', now),
      org_id: scope.orgId,
      livemode: liveFlag(scope),
      name: input.name,
      uid: input.uid ?? null,
      portal_token_hash: hashToken(portalToken),
      operational: 0,
      metadata: JSON.stringify(input.metadata ?? {}),
      created_at: now,
      updated_at: now,
    };
    try {
      await this.ctx.db.transaction().execute(async (trx) => {
        await trx.insertInto('applications').values(row).execute();
        await recordChange(trx, scope, now, {
          action: 'application.created',
          resource: 'application',
          resourceId: row.id,
          before: null,
          after: row,
        });
      });
    } catch (error) {
      if (isUniqueViolation(error) && input.uid !== undefined) throw new UidTakenError(input.uid);
      throw error;
    }
    return { ...row, portalToken };
  }

  /** A page of the environment's applications; `only` (ids) narrows it to those (an application-scoped key's). */
  async list(scope: Scope, page: PageRequest, only: readonly string[] | null = null): Promise<Page<ApplicationRow>> {
    let query = this.ctx.db
      .selectFrom('applications')
      .selectAll()
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope))
      .where('operational', '=', 0);
    if (only !== null) query = query.where('id', 'in', only);
    const ascending = page.order === 'asc';
    if (page.cursor) query = query.where('id', ascending ? '>' : '<', page.cursor);
    return toPage(
      await query
        .orderBy('id', ascending ? 'asc' : 'desc')
        .limit(page.limit + 1)
        .execute(),
      page.limit,
    );
  }

  /** An application by id or by its uid (the hidden application of operational endpoints is none). */
  async get(scope: Scope, idOrUid: string): Promise<ApplicationRow | undefined> {
    return this.ctx.db
      .selectFrom('applications')
      .selectAll()
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope))
      .where('operational', '=', 0)
      .where((eb) => eb.or([eb('id', '=', idOrUid), eb('uid', '=', idOrUid)]))
      .executeTakeFirst();
  }

  /** An application's uid by its id (null: none set, or the application is gone). */
  async uidOf(id: string): Promise<string | null> {
    const row = await this.ctx.db.selectFrom('applications').select('uid').where('id', '=', id).executeTakeFirst();
    return row?.uid ?? null;
  }

  /** The application a portal token opens: its own token, or a portal link's that has not expired. */
  async getByPortalToken(token: string): Promise<ApplicationRow | undefined> {
    const hash = hashToken(token);
    const own = await this.ctx.db
      .selectFrom('applications')
      .selectAll()
      .where('portal_token_hash', '=', hash)
      .where('operational', '=', 0)
      .executeTakeFirst();
    if (own) return own;
    return this.ctx.db
      .selectFrom('portal_links')
      .innerJoin('applications', 'applications.id', 'portal_links.app_id')
      .selectAll('applications')
      .where('portal_links.token_hash', '=', hash)
      .where('portal_links.expires_at', '>', this.ctx.now())
      .where('applications.operational', '=', 0)
      .executeTakeFirst();
  }

  /** A new portal link to the application, valid until `expiresAt`; its token is returned, once. */
  async createPortalLink(scope: Scope, appId: string, expiresAt: number): Promise<string> {
    const token = randomToken(32);
    const now = this.ctx.now();
    await this.ctx.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('portal_links')
        .values({ token_hash: hashToken(token), app_id: appId, expires_at: expiresAt, created_at: now })
        .execute();
      await recordChange(trx, scope, now, {
        action: 'portal_link.created',
        resource: 'portal_link',
        resourceId: appId,
        before: null,
        after: { app_id: appId, expires_at: expiresAt },
      });
    });
    return token;
  }

  async update(
    scope: Scope,
    id: string,
    changes: {
      name?: string | undefined;
      uid?: string | null | undefined;
      metadata?: Record<string, string> | undefined;
    },
  ): Promise<ApplicationRow | undefined> {
    const current = await this.get(scope, id);
    if (!current) return undefined;
    const next: ApplicationRow = {
      ...current,
      name: changes.name ?? current.name,
      uid: changes.uid === undefined ? current.uid : changes.uid,
      metadata: changes.metadata === undefined ? current.metadata : JSON.stringify(changes.metadata),
      updated_at: this.ctx.now(),
    };
    try {
      await this.ctx.db.transaction().execute(async (trx) => {
        await trx
          .updateTable('applications')
          .set({ name: next.name, uid: next.uid, metadata: next.metadata, updated_at: next.updated_at })
          .where('id', '=', current.id)
          .execute();
        await recordChange(trx, scope, next.updated_at, {
          action: 'application.updated',
          resource: 'application',
          resourceId: current.id,
          before: current,
          after: next,
        });
      });
    } catch (error) {
      if (isUniqueViolation(error) && next.uid !== null) throw new UidTakenError(next.uid);
      throw error;
    }
    return next;
  }

  /**
   * Gives the application a new portal token and ends every portal link to it: the old portal path and the
   * links made by app-portal-access stop working at once, so rotation ends whichever link leaked.
   */
  async rotatePortalToken(
    scope: Scope,
    idOrUid: string,
  ): Promise<(ApplicationRow & { portalToken: string }) | undefined> {
    const portalToken = randomToken(32);
    // One transaction: the token answered is the one stored (an application deleted meanwhile answers
    // none), and no link of the application outlives it.
    const row = await this.ctx.db.transaction().execute(async (trx) => {
      const rotated = await trx
        .updateTable('applications')
        .set({ portal_token_hash: hashToken(portalToken), updated_at: this.ctx.now() })
        .where('org_id', '=', scope.orgId)
        .where('livemode', '=', liveFlag(scope))
        .where('operational', '=', 0)
        .where((eb) => eb.or([eb('id', '=', idOrUid), eb('uid', '=', idOrUid)]))
        .returningAll()
        .executeTakeFirst();
      if (rotated) {
        await trx.deleteFrom('portal_links').where('app_id', '=', rotated.id).execute();
        // The token's hash changed: the entry says so, redacted.
        await recordChange(trx, scope, rotated.updated_at, {
          action: 'application.portal_rotated',
          resource: 'application',
          resourceId: rotated.id,
          before: { portal_token_hash: 'before' },
          after: { portal_token_hash: rotated.portal_token_hash },
        });
      }
      return rotated;
    });
    return row && { ...row, portalToken };
  }

  /**
   * Deletes an application with its endpoints. Messages and deliveries stay readable by id until
   * retention removes them; queued attempts are dropped since no endpoint is left to receive them.
   */
  async delete(scope: Scope, id: string): Promise<boolean> {
    const current = await this.get(scope, id);
    if (!current) return false;
    let queued = 0;
    await this.ctx.db.transaction().execute(async (trx) => {
      // Endpoints first, in id order, then their tasks and deliveries: the store's lock order
      // (src/store/queue/postgres.ts).
      let endpoints = trx.selectFrom('endpoints').select(['id', 'type']).where('app_id', '=', current.id).orderBy('id');
      if (this.ctx.dialect === 'postgres') endpoints = endpoints.forUpdate();
      const deleted = await endpoints.execute();
      const endpointIds = deleted.map((r) => r.id);
      const now = this.ctx.now();
      await book.stopEndpoints(trx, endpointIds, 'failed', now);
      await forgetEndpoints(trx, endpointIds);
      await trx.deleteFrom('endpoints').where('app_id', '=', current.id).execute();
      await trx.deleteFrom('portal_links').where('app_id', '=', current.id).execute();
      await trx.deleteFrom('applications').where('id', '=', current.id).execute();
      await recordChange(trx, scope, now, {
        action: 'application.deleted',
        resource: 'application',
        resourceId: current.id,
        before: current,
        after: null,
      });
      // Each endpoint deleted with it is an endpoint.deleted, raised with the delete.
      queued = await raiseOccurrences(
        trx,
        this.raise,
        deleted.map((endpoint) =>
          endpointOccurrence(
            'endpoint.deleted',
            {
              orgId: current.org_id,
              livemode: current.livemode,
              appId: current.id,
              appUid: current.uid,
              endpointId: endpoint.id,
              endpointType: endpoint.type,
            },
            now,
          ),
        ),
        now,
      );
    });
    if (queued > 0) this.onQueued();
    return true;
  }
}
