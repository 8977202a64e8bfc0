import { liveFlag, type Scope, type StoreContext } from './common.js';

/** What a request with an idempotency key finds: nothing (it goes on), a kept answer, or a first still running. */
export type ReplayLookup =
  | { kind: 'first' }
  | { kind: 'answer'; status: number; body: string | null }
  | { kind: 'running' }
  | { kind: 'other-request'; request: string };

/**
 * Answers kept by idempotency key (the Svix surface's POSTs: its SDK sends `idempotency-key` on each, and
 * retries a 5xx). The first request claims the key with a short lease (`runningMs`), so a repeat that
 * arrives while it runs is told so rather than run twice, and a process that died mid-request does not
 * hold the key for long; a success is then kept for `keepMs`. A refusal or a failure is not kept: it
 * created nothing, and the repeat (perhaps corrected, or after the cause went) runs.
 */
export class RequestReplays {
  constructor(
    private readonly ctx: StoreContext,
    private readonly keepMs: number,
    private readonly runningMs = 60_000,
  ) {}

  /** Claims `key` for `request` (method and path), or reports what holds it. */
  async claim(scope: Scope, key: string, request: string): Promise<ReplayLookup> {
    const now = this.ctx.now();
    for (let tries = 0; tries < 3; tries++) {
      const inserted = await this.ctx.db
        .insertInto('request_replays')
        .values({
          org_id: scope.orgId,
          livemode: liveFlag(scope),
          key,
          request,
          status: 0,
          body: null,
          expires_at: now + this.runningMs,
        })
        .onConflict((oc) => oc.columns(['org_id', 'livemode', 'key']).doNothing())
        .executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) > 0) return { kind: 'first' };
      const row = await this.row(scope, key);
      if (!row) continue;
      if (row.expires_at <= now) {
        // Expired (a kept answer past its time, or a first request that never finished): taken over.
        await this.ctx.db
          .deleteFrom('request_replays')
          .where('org_id', '=', scope.orgId)
          .where('livemode', '=', liveFlag(scope))
          .where('key', '=', key)
          .where('expires_at', '=', row.expires_at)
          .execute();
        continue;
      }
      if (row.request !== request) return { kind: 'other-request', request: row.request };
      if (row.status === 0) return { kind: 'running' };
      return { kind: 'answer', status: row.status, body: row.body };
    }
    return { kind: 'running' };
  }

  /** Keeps a success under a claimed key, or lets the key go (a refusal or a failure: the repeat runs). */
  async finish(scope: Scope, key: string, status: number, body: string | null): Promise<void> {
    const where = this.ctx.db
      .updateTable('request_replays')
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope))
      .where('key', '=', key)
      .where('status', '=', 0);
    if (status >= 300) {
      await this.ctx.db
        .deleteFrom('request_replays')
        .where('org_id', '=', scope.orgId)
        .where('livemode', '=', liveFlag(scope))
        .where('key', '=', key)
        .where('status', '=', 0)
        .execute();
      return;
    }
    await where.set({ status, body, expires_at: this.ctx.now() + this.keepMs }).execute();
  }

  private row(scope: Scope, key: string) {
    return this.ctx.db
      .selectFrom('request_replays')
      .selectAll()
      .where('org_id', '=', scope.orgId)
      .where('livemode', '=', liveFlag(scope))
      .where('key', '=', key)
      .executeTakeFirst();
  }
}
