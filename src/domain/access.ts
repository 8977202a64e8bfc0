// What an API key may do: its role, the applications it is limited to and its expiry. Pure rules; the API
// applies them to each route (src/api/access.ts).

export const ROLES = ['admin', 'writer', 'reader', 'emitter'] as const;
export type Role = (typeof ROLES)[number];

/**
 * What a route touches, as the roles see it:
 * - `admin`: API keys, operational endpoints, organization settings and the audit log: admin keys only;
 * - `emit`: emitting a message: every role but reader;
 * - `message`: one message's metadata: every role;
 * - `general`: everything else: admin and writer change it, and reader reads it too.
 *
 * A reader reads what a writer may change, so it does not read keys or operational endpoints: a role's
 * reach grows from emitter and reader to writer to admin, never sideways.
 */
export type Area = 'admin' | 'emit' | 'message' | 'general';

/** A key's power: what it may do, where, and until when. */
export interface KeyPower {
  role: Role;
  /** The applications (`app_…` ids) it acts on; null: every application. */
  appIds: readonly string[] | null;
  /** When it stops working (ms since the epoch); null: never. */
  expiresAt: number | null;
}

/** The power of the keys made before roles existed, and of a key made without the new fields. */
export const FULL_POWER: KeyPower = { role: 'admin', appIds: null, expiresAt: null };

const READS = new Set(['GET', 'HEAD']);
/** Whether a request's method only reads. */
export const onlyReads = (method: string): boolean => READS.has(method);

/**
 * Why `role` may not make this request (`method` on a route of `area`, named as `what` in the answer), or
 * null when it may.
 */
export function roleRefusal(role: Role, area: Area, method: string, what: string): string | null {
  const reads = onlyReads(method);
  switch (role) {
    case 'admin':
      return null;
    case 'writer':
      return area === 'admin'
        ? `this key's role writer cannot ${what}: API keys, operational endpoints and the audit log need an admin key`
        : null;
    case 'reader':
      if (area === 'admin')
        return `this key's role reader cannot ${what}: API keys, operational endpoints and the audit log need an admin key`;
      return reads ? null : `this key's role reader cannot ${what}: it may only read`;
    case 'emitter':
      return area === 'emit' || (area === 'message' && reads)
        ? null
        : `this key's role emitter cannot ${what}: it may only emit messages and read them back`;
  }
}

/** Why a key limited to `appIds` may not act on application `appId`, or null when it may. */
export function applicationRefusal(appIds: readonly string[] | null, appId: string): string | null {
  if (appIds === null || appIds.includes(appId)) return null;
  return `this key is limited to ${describeApps(appIds)} and cannot act on application ${appId}`;
}

/** Why a key limited to `appIds` may not make a request that spans every application (`what`), or null. */
export function everyApplicationRefusal(appIds: readonly string[] | null, what: string): string | null {
  if (appIds === null) return null;
  return `this key is limited to ${describeApps(appIds)} and cannot ${what}: that needs a key for every application`;
}

const describeApps = (appIds: readonly string[]) =>
  appIds.length === 1 ? `application ${appIds[0]}` : `applications ${appIds.join(', ')}`;

/**
 * Why a key of power `maker` may not make a key of power `made`, or null when it may: a key never makes
 * one that reaches further (an application it is not limited to, or every application while it is
 * limited) or lasts longer (no expiry, or a later one, while it expires). Only admin keys make keys
 * (area `admin`), and every role is within an admin's, so roles never refuse here.
 */
export function widerKeyRefusal(maker: KeyPower, made: KeyPower): string | null {
  if (maker.appIds !== null) {
    if (made.appIds === null)
      return `this key is limited to ${describeApps(maker.appIds)}; a key it makes must name app_ids among them`;
    const outside = made.appIds.filter((id) => !maker.appIds!.includes(id));
    if (outside.length > 0)
      return `this key is limited to ${describeApps(maker.appIds)} and cannot make a key for ${describeApps(outside)}`;
  }
  if (maker.expiresAt !== null && (made.expiresAt === null || made.expiresAt > maker.expiresAt))
    return `this key expires at ${new Date(maker.expiresAt).toISOString()}; a key it makes must expire by then (expires_at)`;
  return null;
}
