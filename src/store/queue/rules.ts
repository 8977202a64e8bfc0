import { type RawBuilder, sql } from 'kysely';
import { QUEUE_COLUMNS } from './columns.js';

// The queue's rules that SQL applies, each written once as text over a table name or alias, with `{name}`
// for its values: the hand-written PostgreSQL statements (postgres-statements.ts) put the text in and bind
// the values by name; the statements built with kysely take it through `rule`, which binds them as
// parameters. So the one-statement outcome and the transaction that reads first cannot apply two versions.

/** No worker holds the delivery's head at `{now}`: never claimed or handed back, or its lease has run out. */
export const NOT_HELD = (t: string) => `(${t}.lease_owner is null or ${t}.lease_until <= {now})`;

/**
 * An endpoint a success writes (to `active` with no failure streak): not `active`, or carrying a run of
 * failures or an exhaustion in it. A disabled one is never written by an outcome's success.
 */
export const CHANGED_BY_SUCCESS = (t: string) =>
  `(${t}.status <> 'disabled' and (${t}.status <> 'active' or ${t}.failing_since is not null or ${t}.exhausted_at is not null))`;

/** A delivery an endpoint's stop writes: pending, or with an attempt queued. */
export const STOPPABLE = (t: string) =>
  `(${t}.status = 'pending' or ${t}.run_at is not null or ${t}.queued_after is not null)`;

/**
 * What a stop writes to such a delivery: its queue emptied, `pending` becomes `{stopped}` (`disabled` when
 * the endpoint is switched off, `failed` when it is deleted), at `{at}`.
 */
export const STOPPED = (t: string) =>
  `status = case when ${t}.status = 'pending' then {stopped} else ${t}.status end, updated_at = {at},
  ${QUEUE_COLUMNS.map((column) => `${column} = null`).join(', ')}`;

/** A rule's text as a kysely expression, its `{name}` values bound as parameters. */
export function rule<T = boolean>(text: string, values: Record<string, unknown> = {}): RawBuilder<T> {
  const parts = text.split(/\{([a-z_]+)\}/);
  const strings = parts.filter((_, i) => i % 2 === 0);
  const names = parts.filter((_, i) => i % 2 === 1);
  for (const name of names) if (!(name in values)) throw new Error(`no value for {${name}} in ${text}`);
  const template = Object.assign([...strings], { raw: [...strings] }) as unknown as TemplateStringsArray;
  return sql<T>(template, ...names.map((name) => values[name]));
}
