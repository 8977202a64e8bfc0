// The audit log's rules: who made a change (the actor), how an entry names it, and what changed, with
// every secret redacted. The store writes an entry in the transaction of each change of configuration
// (src/store/audit-log.ts).

export const ACTOR_TYPES = ['api_key', 'portal', 'cli', 'system'] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];

/** Who asks for a change: an API key (its id), a portal link (its application), the operator's CLI, or Herald. */
export interface Actor {
  type: ActorType;
  id: string | null;
  /** The request that made the change (`req_…`); null outside a request. */
  requestId: string | null;
}

/** The actor of a change made outside any request and command: Herald itself. */
export const SYSTEM_ACTOR: Actor = { type: 'system', id: null, requestId: null };

/** What a secret's value reads as in an entry. */
export const REDACTED = '<redacted>';

/** Each changed field's value before and after (null before a create, after a delete). */
export type Changes = Record<string, [unknown, unknown]>;

/** How a resource's row reads in an entry: the fields that hold secrets, JSON text, or nothing to report. */
export interface RowShape {
  secret: ReadonlySet<string>;
  json: ReadonlySet<string>;
  ignored: ReadonlySet<string>;
}

type Row = Record<string, unknown>;

/**
 * The fields that differ between `before` and `after` (either may be null: a create, a delete), each as
 * [before, after]. A secret field's values read `<redacted>` (null stays null, so a secret set or removed
 * still shows); JSON text is read as the value it holds.
 */
export function changesOf(beforeRow: object | null, afterRow: object | null, shape: RowShape): Changes {
  const before = beforeRow as Row | null;
  const after = afterRow as Row | null;
  const changes: Changes = {};
  const fields = new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})]);
  for (const field of fields) {
    if (shape.ignored.has(field)) continue;
    const was = before?.[field] ?? null;
    const is = after?.[field] ?? null;
    if (was === is) continue;
    changes[field] = [shown(field, was, shape), shown(field, is, shape)];
  }
  return changes;
}

function shown(field: string, value: unknown, shape: RowShape): unknown {
  if (value === null) return null;
  if (shape.secret.has(field)) return REDACTED;
  if (shape.json.has(field) && typeof value === 'string') {
    try {
      return JSON.parse(value);
    } catch {
      return value;
    }
  }
  return value;
}
