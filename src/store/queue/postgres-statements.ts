// The PostgreSQL queue's hot statements, each a fixed text with its values in arrays: the server parses
// and plans each once per connection (they are named, so prepared), and no query builder runs per claim
// or per outcome. Tests run and EXPLAIN them through these functions.

import type { DeliveryState, PlannedAttempt } from '../../domain/outcome-plan.js';
import { QUEUE_COLUMNS } from './columns.js';
import { CHANGED_BY_SUCCESS, NOT_HELD, STOPPABLE, STOPPED } from './rules.js';
import { SEND_COLUMNS, sendColumnsSql } from './inputs.js';

/** A statement as node-postgres takes it: a name prepares it once per connection. */
export interface Statement {
  name: string;
  text: string;
  values: unknown[];
}

/**
 * The columns a claim returns: the delivery as the claim left it (its counters and queue, the state the
 * outcome's plan starts from), and what sending needs (message, payload when short enough, endpoint with
 * its sealed secrets and its health).
 */
const CLAIMED_COLUMNS = `c.id, c.next_trigger, c.next_attempt,
  c.id as d_id, c.status as d_status, c.attempt_count, c.schedule_step, c.attempt_seq, c.first_attempt_id,
  c.run_at, c.lease_owner, c.lease_until, c.queued_after,
  m.id as m_id, case when octet_length(p.body) <= $7 then p.body end as body, p.message_id as payload_id,
  e.id as e_id, e.status as endpoint_status, e.failing_since, e.exhausted_at,
  c.endpoint_id, ${sendColumnsSql({ deliveries: 'c', messages: 'm', endpoints: 'e' })}`;

/**
 * Where a statement's deliveries are found by the range of their ids too, in its ranged forms (a claim's
 * `claimText`, an outcome batch's `completeText`). A custom plan sees the range's ends as values, so on
 * partitioned tables it holds (locks, opens) only the partitions of those ids rather than every one; on
 * plain tables the range made PostgreSQL read the primary key over it (an outcome batch took about 1.7x the
 * server's CPU), so the plain tables' forms leave it out.
 */
const D_RANGE = '/*d_range*/';

const CLAIMED_JOINS = `from claimed c
  left join messages m on m.id = c.message_id/*m_range*/
  left join payloads p on p.message_id = c.message_id/*p_range*/
  left join endpoints e on e.id = c.endpoint_id`;

/**
 * The claim's update of the due deliveries: their lease, columns no index covers (a HOT update). The range
 * of the due ids lets the executor leave out the partitions that hold none of them (docs/design/partitions.md).
 */
const CLAIMED = `claimed as (
    update deliveries set lease_owner = $2, lease_until = $1 where id = any(array(select id from due))
      and id between (select min(id) from due) and (select max(id) from due)${D_RANGE}
    returning id, endpoint_id, status, attempt_count, schedule_step, attempt_seq, first_attempt_id,
      ${[...SEND_COLUMNS.deliveries, ...QUEUE_COLUMNS].join(', ')}
  )`;

/**
 * Claims up to $5 due attempts for $2 until $1 (their deliveries' lease), and returns them with their
 * inputs. Workers in other processes skip rows being claimed instead of waiting on them. The due ids are
 * read once, as an array the update finds through the primary key: as `id in (…)` the planner expected
 * `limit` rows and hashed them against a scan of every delivery.
 *
 * The general claim reads the due index (run_at) from $3 back to $4, leaving out the endpoints in $6
 * (those the worker is busy with or leaves to their top-ups) and the attempts a worker holds; a top-up
 * reads one endpoint's due attempts through its own index (endpoint_id, run_at).
 */
const GENERAL_CLAIM = `with due as (
    select id from deliveries
    where run_at <= $3 and run_at > $4 and endpoint_id <> all($6::text[])
      and (lease_owner is null or lease_until <= $3)${D_RANGE}
    order by run_at limit $5 for update skip locked
  ), ${CLAIMED}
  select ${CLAIMED_COLUMNS} ${CLAIMED_JOINS}`;

const TOP_UP_CLAIM = `with due as (
    select id from deliveries
    where endpoint_id = $6 and run_at <= $3 and run_at > $4
      and (lease_owner is null or lease_until <= $3)${D_RANGE}
    order by run_at limit $5 for update skip locked
  ), ${CLAIMED}
  select ${CLAIMED_COLUMNS} ${CLAIMED_JOINS}`;

export interface ClaimParams {
  owner: string;
  leaseUntil: number;
  now: number;
  /** Only attempts due after this (the worker's window); 0: all due. */
  dueAfter: number;
  limit: number;
  /** Endpoints left out (a general claim). */
  skip: readonly string[];
  /** Only this endpoint (a top-up). */
  only?: string | undefined;
  payloadLimit: number;
}

/**
 * Where a claim on partitioned tables reads: deliveries with ids from `deliveries.from` up to (not including)
 * `deliveries.to`, and their messages and payloads in `messages`' range. Custom plans see the ends as
 * values and hold only the partitions between them; a claimed delivery whose message lies outside comes
 * without it (the queue reads its input apart).
 */
export interface ClaimRanges {
  deliveries: { from: string; to: string };
  messages: { from: string; to: string };
}

/** The claim's text, with the ranges' conditions where `ranged` ($8 to $11) and none where not. */
function claimText(text: string, ranged: boolean): string {
  return text
    .replaceAll(D_RANGE, ranged ? ' and id >= $8 and id < $9' : '')
    .replace('/*m_range*/', ranged ? ' and m.id >= $10 and m.id < $11' : '')
    .replace('/*p_range*/', ranged ? ' and p.message_id >= $10 and p.message_id < $11' : '');
}

const CLAIM_FORMS = {
  herald_claim: claimText(GENERAL_CLAIM, false),
  herald_claim_top_up: claimText(TOP_UP_CLAIM, false),
  herald_claim_ranged: claimText(GENERAL_CLAIM, true),
  herald_claim_top_up_ranged: claimText(TOP_UP_CLAIM, true),
};

/** A claim (a top-up when `p.only` names an endpoint), within `ranges` on partitioned tables. */
export function claimStatement(p: ClaimParams, ranges: ClaimRanges | null = null): Statement {
  const top = p.only !== undefined;
  const name = `herald_claim${top ? '_top_up' : ''}${ranges ? '_ranged' : ''}` as keyof typeof CLAIM_FORMS;
  const values: unknown[] = [p.leaseUntil, p.owner, p.now, p.dueAfter, p.limit, top ? p.only : p.skip, p.payloadLimit];
  if (ranges) values.push(ranges.deliveries.from, ranges.deliveries.to, ranges.messages.from, ranges.messages.to);
  return { name, text: CLAIM_FORMS[name], values };
}

/**
 * Rows are found by id from arrays written `id = any(array(select unnest(…)))`: as `= any(…)` PostgreSQL
 * without table statistics expects a list of 100 ids to match half the table and reads it whole; from a
 * subquery's array it expects a few rows and looks each one up by its index. The deliveries' expected and
 * new values are unnested once, into `batch` (materialized), which the lock and the update join by id: a
 * plan that rescans the join's inner side per delivery then reads stored rows, rather than unnesting every
 * array again for each delivery.
 *
 * Writes a planned batch of outcomes in one statement, if every fact the plan was made from still holds;
 * otherwise writes nothing and answers false (the queue then records the batch in a transaction that
 * reads what it needs first). The facts: the attempt rows are new; each delivery's counters, status and
 * queue (its lease ours) are those the plan assumed; each endpoint with a failure in the batch has the
 * health the plan assumed. Their rows are locked in the lock order of postgres.ts (endpoints, then
 * deliveries) before anything is written, and every write is conditional on the check, so the statement
 * is all or nothing without an error. The statement decides nothing: each delivery's new values, the
 * holds, the stops and the health come planned (fast-plan.ts). A hold moves the paused endpoint's waiting
 * attempts that no worker holds, other than the batch's deliveries. A stop (an endpoint the batch
 * disables) empties the queues of the endpoint's other deliveries and marks the pending ones `disabled`.
 * The batch's operational events are stored with it (outcome_events), to be raised right after. The
 * statement is its parts, each a CTE, in the order they run (lock endpoints, lock deliveries, check, write).
 */
const PARTS = {
  e_lock: `e_lock as (
    select e.id, e.status, e.failing_since, e.exhausted_at from endpoints e
    where e.id = any(array(select unnest({h_id}::text[]) union all select unnest({healthy}::text[])))
      and (e.id = any({h_id}::text[]) or ${CHANGED_BY_SUCCESS('e')})
    order by e.id for update
  )`,
  e_ok: `e_ok as (
    select count(*) = cardinality({h_id}::text[]) as ok
    from e_lock l join unnest({h_id}::text[], {h_was_st}::text[], {h_was_fs}::bigint[], {h_was_ea}::bigint[])
      as x(id, st, fs, ea) on l.id = x.id
    where l.status = x.st and l.failing_since is not distinct from x.fs and l.exhausted_at is not distinct from x.ea
  )`,
  batch: `batch as materialized (
    select * from unnest({d_id}::text[], {was_st}::text[], {was_ac}::int[], {was_ss}::int[], {was_seq}::int[],
      {was_ra}::bigint[], {was_nt}::text[], {was_na}::int[], {was_lo}::text[], {was_lu}::bigint[], {was_qa}::text[],
      {was_fa}::text[], {st}::text[], {ac}::int[], {ss}::int[], {seq}::int[], {at}::bigint[],
      {ra}::bigint[], {nt}::text[], {na}::int[], {lo}::text[], {lu}::bigint[], {qa}::text[], {fa}::text[],
      {f_at}::bigint[], {f_duration}::int[], {f_status}::int[], {f_body}::text[], {f_request_headers}::text[],
      {f_response_headers}::text[], {f_request}::text[])
      as x(id, was_st, was_ac, was_ss, was_seq, was_ra, was_nt, was_na, was_lo, was_lu, was_qa, was_fa,
        st, ac, ss, seq, at, ra, nt, na, lo, lu, qa, fa, f_at, f_duration, f_status, f_body,
        f_request_headers, f_response_headers, f_request)
  )`,
  d_lock: `d_lock as (
    select d.id from batch x join deliveries d on d.id = x.id
    where d.id = any(array(select unnest({d_id}::text[])))${D_RANGE}
      and d.status = x.was_st and d.attempt_count = x.was_ac and d.schedule_step = x.was_ss
      and d.attempt_seq = x.was_seq and d.first_attempt_id is not distinct from x.was_fa
      and d.run_at is not distinct from x.was_ra and d.next_trigger is not distinct from x.was_nt
      and d.next_attempt is not distinct from x.was_na and d.lease_owner is not distinct from x.was_lo
      and d.lease_until is not distinct from x.was_lu and d.queued_after is not distinct from x.was_qa
      and (select count(*) from e_lock) >= 0
    order by d.id for update of d
  )`,
  checked: `checked as (
    select (select ok from e_ok)
      and (select count(*) from d_lock) = cardinality({d_id}::text[])
      and not exists (select 1 from attempts a
        where a.id = any(array(select unnest({a_id}::text[]))) and a.id between {a_min} and {a_max}) as ok
  )`,
  attempts_in: `attempts_in as (
    insert into attempts (id, delivery_id, endpoint_id, attempt_number, trigger, status, response_status,
      response_body, error, duration_ms, created_at, request_headers, response_headers, request)
    select * from unnest({a_id}::text[], {a_delivery}::text[], {a_endpoint}::text[], {a_number}::int[],
      {a_trigger}::text[], {a_status}::text[], {a_response_status}::int[], {a_response_body}::text[],
      {a_error}::text[], {a_duration}::int[], {a_at}::bigint[], {a_request_headers}::text[], {a_response_headers}::text[],
      {a_request}::text[])
    where (select ok from checked)
  )`,
  counted: `counted as (
    update deliveries d set status = x.st, attempt_count = x.ac, schedule_step = x.ss, attempt_seq = x.seq,
      updated_at = x.at, run_at = x.ra, next_trigger = x.nt, next_attempt = x.na, lease_owner = x.lo,
      lease_until = x.lu, queued_after = x.qa, first_attempt_id = x.fa,
      first_attempt_at = coalesce(x.f_at, d.first_attempt_at),
      first_duration_ms = coalesce(x.f_duration, d.first_duration_ms),
      first_response_status = coalesce(x.f_status, d.first_response_status),
      first_response_body = coalesce(x.f_body, d.first_response_body),
      first_request_headers = coalesce(x.f_request_headers, d.first_request_headers),
      first_response_headers = coalesce(x.f_response_headers, d.first_response_headers),
      first_request = coalesce(x.f_request, d.first_request)
    from batch x
    where d.id = any(array(select unnest({d_id}::text[])))${D_RANGE} and d.id = x.id and (select ok from checked)
  )`,
  held: `held as (
    update deliveries d set run_at = h.until
    from unnest({hold_endpoint}::text[], {hold_until}::bigint[]) as h(endpoint_id, until)
    where d.endpoint_id = any(array(select unnest({hold_endpoint}::text[]))) and d.endpoint_id = h.endpoint_id
      and d.run_at < h.until and ${NOT_HELD('d')}
      and d.id <> all({d_id}::text[]) and (select ok from checked)
  )`,
  health: `health as (
    update endpoints e set status = x.st, failing_since = x.fs, exhausted_at = x.ea, updated_at = x.at
    from unnest({h_id}::text[], {h_st}::text[], {h_fs}::bigint[], {h_ea}::bigint[], {h_at}::bigint[], {h_changed}::boolean[])
      as x(id, st, fs, ea, at, changed)
    where e.id = x.id and x.changed and (select ok from checked)
  )`,
  healthy: `healthy as (
    update endpoints e set status = 'active', failing_since = null, exhausted_at = null, updated_at = {healthy_at}
    where e.id in (select id from e_lock where id = any({healthy}::text[])) and (select ok from checked)
  )`,
  stopped: `stopped as (
    update deliveries d set ${STOPPED('d').replace('{stopped}', "'disabled'").replace('{at}', 's.at')}
    from unnest({stop_endpoint}::text[], {stop_at}::bigint[]) as s(endpoint_id, at)
    where d.endpoint_id = any(array(select unnest({stop_endpoint}::text[]))) and d.endpoint_id = s.endpoint_id
      and ${STOPPABLE('d')}
      and d.id <> all({d_id}::text[]) and (select ok from checked)
  )`,
  stored: `stored as (
    insert into outcome_events (id, body, created_at)
    select * from unnest({e_id}::text[], {e_body}::text[], {e_at}::bigint[])
    where (select ok from checked)
  )`,
};

const ALL_PARTS = Object.keys(PARTS) as (keyof typeof PARTS)[];

/**
 * The statement for a batch with no holds, stops, health to write or operational events (the common case:
 * successes and plain failures of healthy endpoints): the same parts without those that would write them.
 * Each part left out updates rows by endpoint, which on partitioned tables PostgreSQL plans over every
 * partition, however few rows it updates; and a custom plan is made for each run.
 */
const PLAIN_PARTS: (keyof typeof PARTS)[] = [
  'e_lock',
  'e_ok',
  'batch',
  'd_lock',
  'checked',
  'attempts_in',
  'counted',
  'healthy',
];

/** The statement of `parts`, its deliveries found by their ids' range too when `ranged` (D_RANGE). */
function completeText(parts: readonly (keyof typeof PARTS)[], ranged: boolean): string {
  const text = `with\n  ${parts.map((name) => PARTS[name]).join(',\n  ')}\n  select ok from checked`;
  return text.replaceAll(D_RANGE, ranged ? ' and d.id between {d_min} and {d_max}' : '');
}

/** The four forms, by name: every part or the plain ones, for plain tables or ranged for partitioned ones. */
const COMPLETE_FORMS = {
  herald_complete: completeText(ALL_PARTS, false),
  herald_complete_plain: completeText(PLAIN_PARTS, false),
  herald_complete_ranged: completeText(ALL_PARTS, true),
  herald_complete_plain_ranged: completeText(PLAIN_PARTS, true),
};

/** One outcome's attempt row, as the statement's arrays take it. */
export type AttemptValues = PlannedAttempt;

/** A delivery's columns the statement checks and writes. */
export type DeliveryValues = DeliveryState & { updated_at?: number };

/** A delivery's state before the batch (as the plan assumed it) and after it. */
export interface DeliveryWrite {
  id: string;
  expect: DeliveryState;
  after: DeliveryState & { updated_at: number };
  /** The first attempt the batch records on the delivery row (its id is after.first_attempt_id); null: none. */
  first: PlannedAttempt | null;
}

/**
 * An endpoint with a failure in the batch: its health before the batch (as the plan assumed it) and after
 * it. It is locked and checked even when its health does not change (`changed` false): a failure's next
 * attempt must not be queued beside a concurrent disabling of the endpoint that would miss it.
 */
export interface HealthWrite {
  id: string;
  expect: { status: string; failingSince: number | null; exhaustedAt: number | null };
  changed: boolean;
  status: string;
  failingSince: number | null;
  exhaustedAt: number | null;
  at: number;
}

export interface CompleteParams {
  now: number;
  attempts: readonly AttemptValues[];
  deliveries: readonly DeliveryWrite[];
  /** Endpoints paused by an answer (a 429 or 503 with Retry-After): their unheld attempts wait until then. */
  holds: readonly { endpointId: string; until: number }[];
  /** Every endpoint with a failure in the batch, its health written where it changes. */
  health: readonly HealthWrite[];
  /** Endpoints whose outcomes were all successes: active with no failure streak, unless disabled. */
  healthy: { ids: readonly string[]; at: number } | null;
  /** The batch's operational events, each a CausedEvent as JSON (src/store/operational.ts raises them). */
  events: readonly { id: string; body: string; created_at: number }[];
  /** Endpoints the batch disables, with their change time: their other queued attempts stop. */
  stops: readonly { endpointId: string; at: number }[];
}

const column = <T, K extends keyof T>(rows: readonly T[], key: K) => rows.map((row) => row[key]);

/**
 * The least and the greatest of `ids`, as `<prefix>min` and `<prefix>max` (null when there are none). A
 * range PostgreSQL sees when the statement starts, so it reads only the partitions that can hold the ids
 * (docs/design/partitions.md); the arrays alone it sees only once running, too late to leave any out.
 */
function idRange(prefix: string, ids: readonly string[]): Record<string, string | null> {
  let min: string | null = null;
  let max: string | null = null;
  for (const id of ids) {
    if (min === null || id < min) min = id;
    if (max === null || id > max) max = id;
  }
  return { [`${prefix}min`]: min, [`${prefix}max`]: max };
}

/** A delivery state's columns, each as an array, under `prefix`. */
function deliveryArrays(prefix: string, states: readonly DeliveryState[]): Record<string, unknown[]> {
  return {
    [`${prefix}st`]: column(states, 'status'),
    [`${prefix}ac`]: column(states, 'attempt_count'),
    [`${prefix}ss`]: column(states, 'schedule_step'),
    [`${prefix}seq`]: column(states, 'attempt_seq'),
    [`${prefix}ra`]: column(states, 'run_at'),
    [`${prefix}nt`]: column(states, 'next_trigger'),
    [`${prefix}na`]: column(states, 'next_attempt'),
    [`${prefix}lo`]: column(states, 'lease_owner'),
    [`${prefix}lu`]: column(states, 'lease_until'),
    [`${prefix}qa`]: column(states, 'queued_after'),
    [`${prefix}fa`]: column(states, 'first_attempt_id'),
  };
}

/**
 * The statement writing `p`: the plain form when the batch holds, stops, writes no health and stores no
 * event; `ranged` (the history tables are partitioned) finds the deliveries by their ids' range too.
 */
export function completeStatement(p: CompleteParams, ranged = false): Statement {
  const { attempts: a, deliveries: d, health: h } = p;
  const plain = p.holds.length === 0 && h.length === 0 && p.stops.length === 0 && p.events.length === 0;
  const name = `herald_complete${plain ? '_plain' : ''}${ranged ? '_ranged' : ''}` as keyof typeof COMPLETE_FORMS;
  return bound(name, COMPLETE_FORMS[name], {
    now: p.now,
    a_id: column(a, 'id'),
    a_delivery: column(a, 'delivery_id'),
    a_endpoint: column(a, 'endpoint_id'),
    a_number: column(a, 'attempt_number'),
    a_trigger: column(a, 'trigger'),
    a_status: column(a, 'status'),
    a_response_status: column(a, 'response_status'),
    a_response_body: column(a, 'response_body'),
    a_error: column(a, 'error'),
    a_duration: column(a, 'duration_ms'),
    a_at: column(a, 'created_at'),
    a_request_headers: column(a, 'request_headers'),
    a_response_headers: column(a, 'response_headers'),
    a_request: column(a, 'request'),
    d_id: column(d, 'id'),
    ...idRange('a_', column(a, 'id')),
    ...idRange('d_', column(d, 'id')),
    ...deliveryArrays('was_', column(d, 'expect')),
    ...deliveryArrays('', column(d, 'after')),
    at: d.map((x) => x.after.updated_at),
    f_at: d.map((x) => x.first?.created_at ?? null),
    f_duration: d.map((x) => x.first?.duration_ms ?? null),
    f_status: d.map((x) => x.first?.response_status ?? null),
    f_body: d.map((x) => x.first?.response_body ?? null),
    f_request_headers: d.map((x) => x.first?.request_headers ?? null),
    f_response_headers: d.map((x) => x.first?.response_headers ?? null),
    f_request: d.map((x) => x.first?.request ?? null),
    hold_endpoint: column(p.holds, 'endpointId'),
    hold_until: column(p.holds, 'until'),
    h_id: column(h, 'id'),
    h_was_st: h.map((x) => x.expect.status),
    h_was_fs: h.map((x) => x.expect.failingSince),
    h_was_ea: h.map((x) => x.expect.exhaustedAt),
    h_st: column(h, 'status'),
    h_fs: column(h, 'failingSince'),
    h_ea: column(h, 'exhaustedAt'),
    h_at: column(h, 'at'),
    h_changed: column(h, 'changed'),
    healthy: p.healthy?.ids ?? [],
    healthy_at: p.healthy?.at ?? p.now,
    stop_endpoint: column(p.stops, 'endpointId'),
    stop_at: column(p.stops, 'at'),
    e_id: column(p.events, 'id'),
    e_body: column(p.events, 'body'),
    e_at: column(p.events, 'created_at'),
  });
}

/** A statement whose `{name}` placeholders become numbered parameters, each value bound once. */
export function bound(name: string, text: string, values: Record<string, unknown>): Statement {
  const order: string[] = [];
  const numbered = text.replace(/\{([a-z_]+)\}/g, (_, key: string) => {
    if (!(key in values)) throw new Error(`${name}: no value for {${key}}`);
    let index = order.indexOf(key);
    if (index < 0) index = order.push(key) - 1;
    return `$${index + 1}`;
  });
  return { name, text: numbered, values: order.map((key) => values[key]) };
}
