// The PostgreSQL queue's hot statements, each a fixed text with its values in arrays: the server parses
// and plans each once per connection (they are named, so prepared), and no query builder runs per claim
// or per outcome. Tests run and EXPLAIN them through these functions.

/** A statement as node-postgres takes it: a name prepares it once per connection. */
export interface Statement {
  name: string;
  text: string;
  values: unknown[];
}

/**
 * The columns a claim returns besides the task's: what sending needs (delivery, message, payload when
 * short enough, endpoint with its sealed secrets), and the state the outcome's plan starts from (the
 * delivery's counters and how many tasks it has, the endpoint's health).
 */
const CLAIMED_COLUMNS = `c.id, c.delivery_id, c.endpoint_id, c.trigger, c.attempt_number,
  d.id as d_id, d.message_id, d.livemode, d.status as d_status, d.attempt_count, d.schedule_step, d.attempt_seq,
  (select count(*)::int from delivery_tasks x where x.delivery_id = c.delivery_id) as d_tasks,
  m.id as m_id, m.event_type, m.created_at, m.traceparent, m.tracestate,
  case when octet_length(p.body) <= $PAYLOAD_LIMIT then p.body end as body, p.message_id as payload_id,
  e.id as e_id, e.url, e.public_only, e.status as endpoint_status, e.failing_since, e.exhausted_at,
  e.secret_sealed, e.previous_secret_sealed, e.previous_valid_until, e.earlier_secrets_sealed,
  e.earlier_valid_until, e.headers_sealed, e.rate_limit, e.ordering, e.svix_headers,
  e.tls_client_cert, e.tls_client_key_sealed, e.tls_ca, e.auth, e.auth_secret_sealed`;

const CLAIMED_JOINS = `from claimed c
  left join deliveries d on d.id = c.delivery_id
  left join messages m on m.id = d.message_id
  left join payloads p on p.message_id = d.message_id
  left join endpoints e on e.id = d.endpoint_id`;

/**
 * Claims up to $5 due tasks for $2 until $1 (their run_at becomes the lease end), and returns them with
 * their inputs. Workers in other processes skip rows being claimed instead of waiting on them. The due ids
 * are read once, as an array the update finds through the primary key: as `id in (…)` the planner
 * expected `limit` rows and hashed them against a scan of every task row.
 *
 * The general claim reads the due index (run_at) from $3 back to $4, leaving out the endpoints in $6
 * (those the worker is busy with or leaves to their top-ups); a top-up reads one endpoint's due tasks
 * through its own index (endpoint_id, run_at).
 */
const GENERAL_CLAIM = `with due as (
    select id from delivery_tasks
    where run_at <= $3 and run_at > $4 and endpoint_id <> all($6::text[])
    order by run_at limit $5 for update skip locked
  ), claimed as (
    update delivery_tasks set run_at = $1, lease_owner = $2 where id = any(array(select id from due))
    returning id, delivery_id, endpoint_id, trigger, attempt_number
  )
  select ${CLAIMED_COLUMNS.replace('$PAYLOAD_LIMIT', '$7')} ${CLAIMED_JOINS}`;

const TOP_UP_CLAIM = `with due as (
    select id from delivery_tasks
    where endpoint_id = $6 and run_at <= $3 and run_at > $4
    order by run_at limit $5 for update skip locked
  ), claimed as (
    update delivery_tasks set run_at = $1, lease_owner = $2 where id = any(array(select id from due))
    returning id, delivery_id, endpoint_id, trigger, attempt_number
  )
  select ${CLAIMED_COLUMNS.replace('$PAYLOAD_LIMIT', '$7')} ${CLAIMED_JOINS}`;

export interface ClaimParams {
  owner: string;
  leaseUntil: number;
  now: number;
  /** Only tasks due after this (the worker's window); 0: all due. */
  dueAfter: number;
  limit: number;
  /** Endpoints left out (a general claim). */
  skip: readonly string[];
  /** Only this endpoint (a top-up). */
  only?: string | undefined;
  payloadLimit: number;
}

export function claimStatement(p: ClaimParams): Statement {
  const top = p.only !== undefined;
  return {
    name: top ? 'herald_claim_top_up' : 'herald_claim',
    text: top ? TOP_UP_CLAIM : GENERAL_CLAIM,
    values: [p.leaseUntil, p.owner, p.now, p.dueAfter, p.limit, top ? p.only : p.skip, p.payloadLimit],
  };
}

/**
 * Rows are found by id from arrays written `id = any(array(select unnest($n)))`: as `= any($n)` PostgreSQL
 * without table statistics expects a list of 100 ids to match half the table and reads it whole; from a
 * subquery's array it expects a few rows and looks each one up by its index.
 *
 * Writes a planned batch of outcomes in one statement, if every fact the plan was made from still holds;
 * otherwise writes nothing and answers false (the queue then records the batch in a transaction that
 * reads what it needs first). The facts: the attempt rows are new; the tasks are still ours (owner and
 * lease end); each delivery's counters, status and number of tasks are those the plan assumed; each
 * endpoint with a failure in the batch has the health the plan assumed. Their rows are locked in the lock order of
 * postgres.ts (endpoints, then tasks, then deliveries) before anything is written, and every write is
 * conditional on the check, so the statement is all or nothing without an error. A hold moves the paused
 * endpoint's tasks that no worker holds (lease.ts, notHeld), other than those this batch takes. A stop
 * (an endpoint the batch disables) deletes the endpoint's other tasks, held or not, and marks its other
 * pending deliveries `disabled`; the batch's own rows of that endpoint come planned so (fast-plan.ts), as
 * no row is written twice in one statement. The batch's operational events are stored with it
 * (outcome_events), to be raised right after.
 */
const COMPLETE = `with
  e_lock as (
    select e.id, e.status, e.failing_since, e.exhausted_at from endpoints e
    where e.id = any(array(select unnest($32::text[]) union all select unnest($40::text[])))
      and (e.id = any($32::text[]) or (e.status <> 'disabled'
        and (e.status <> 'active' or e.failing_since is not null or e.exhausted_at is not null)))
    order by e.id for update
  ),
  e_ok as (
    select count(*) = cardinality($32::text[]) as ok
    from e_lock l join unnest($32::text[], $33::text[], $34::bigint[], $35::bigint[]) as x(id, st, fs, ea) on l.id = x.id
    where l.status = x.st and l.failing_since is not distinct from x.fs and l.exhausted_at is not distinct from x.ea
  ),
  t_lock as (
    select t.id from delivery_tasks t
    where t.id = any(array(select unnest($13::text[]))) and t.lease_owner = $1
      and (t.id, t.run_at) in (select * from unnest($13::text[], $14::bigint[]))
      and (select count(*) from e_lock) >= 0
    for update
  ),
  d_lock as (
    select d.id from deliveries d
    where d.id = any(array(select unnest($16::text[])))
      and (d.id, d.status, d.attempt_count, d.schedule_step, d.attempt_seq) in
        (select * from unnest($16::text[], $17::text[], $18::int[], $19::int[], $20::int[]))
      and (select count(*) from t_lock) >= 0
    order by d.id for update
  ),
  d_tasks as (
    select k.delivery_id, count(*) as n from delivery_tasks k where k.delivery_id = any(array(select unnest($16::text[])))
    group by k.delivery_id
  ),
  checked as (
    select (select ok from e_ok)
      and (select count(*) from t_lock) = cardinality($13::text[])
      and (select count(*) from d_lock) = cardinality($16::text[])
      and not exists (
        select 1 from unnest($16::text[], $21::int[]) as x(id, tasks) left join d_tasks on d_tasks.delivery_id = x.id
        where coalesce(d_tasks.n, 0) <> x.tasks)
      and not exists (select 1 from attempts a where a.id = any(array(select unnest($2::text[])))) as ok
  ),
  attempts_in as (
    insert into attempts (id, delivery_id, endpoint_id, attempt_number, trigger, status, response_status,
      response_body, error, duration_ms, created_at, request_headers, response_headers)
    select * from unnest($2::text[], $3::text[], $4::text[], $5::int[], $6::text[], $7::text[], $8::int[],
      $9::text[], $10::text[], $11::int[], $12::bigint[], $51::text[], $52::text[])
    where (select ok from checked)
  ),
  taken as (
    delete from delivery_tasks t
    where t.id = any(array(select unnest($13::text[]) union all
        select s.id from unnest($15::text[]) as dd(id)
        cross join lateral (select id from delivery_tasks where delivery_id = dd.id and trigger = 'scheduled' offset 0) as s))
      and (select ok from checked)
  ),
  counted as (
    update deliveries d set status = x.st, attempt_count = d.attempt_count + x.added, schedule_step = x.step,
      attempt_seq = x.seq, updated_at = x.at
    from unnest($16::text[], $22::int[], $23::text[], $24::int[], $25::int[], $26::bigint[]) as x(id, added, st, step, seq, at)
    where d.id = any(array(select unnest($16::text[]))) and d.id = x.id and (select ok from checked)
  ),
  queued as (
    insert into delivery_tasks (id, delivery_id, endpoint_id, trigger, attempt_number, run_at, lease_owner)
    select q.id, q.delivery_id, q.endpoint_id, 'scheduled', q.n, q.run_at, null
    from unnest($27::text[], $28::text[], $29::text[], $30::int[], $31::bigint[]) as q(id, delivery_id, endpoint_id, n, run_at)
    where (select ok from checked)
  ),
  held as (
    update delivery_tasks t set run_at = h.until
    from unnest($44::text[], $45::bigint[]) as h(endpoint_id, until)
    where t.endpoint_id = any(array(select unnest($44::text[]))) and t.endpoint_id = h.endpoint_id
      and t.run_at < h.until and (t.lease_owner is null or t.run_at <= $43)
      and t.id <> all($13::text[]) and not (t.delivery_id = any($15::text[]) and t.trigger = 'scheduled')
      and (select ok from checked)
  ),
  health as (
    update endpoints e set status = x.st, failing_since = x.fs, exhausted_at = x.ea, updated_at = x.at
    from unnest($32::text[], $36::text[], $37::bigint[], $38::bigint[], $39::bigint[], $42::boolean[])
      as x(id, st, fs, ea, at, changed)
    where e.id = x.id and x.changed and (select ok from checked)
  ),
  healthy as (
    update endpoints e set status = 'active', failing_since = null, exhausted_at = null, updated_at = $41
    where e.id in (select id from e_lock where id = any($40::text[])) and (select ok from checked)
  ),
  stopped_tasks as (
    delete from delivery_tasks t
    where t.endpoint_id = any(array(select unnest($49::text[])))
      and t.id <> all($13::text[]) and not (t.delivery_id = any($15::text[]) and t.trigger = 'scheduled')
      and (select ok from checked)
  ),
  stopped as (
    update deliveries d set status = 'disabled', updated_at = s.at
    from unnest($49::text[], $50::bigint[]) as s(endpoint_id, at)
    where d.endpoint_id = any(array(select unnest($49::text[]))) and d.endpoint_id = s.endpoint_id
      and d.status = 'pending' and d.id <> all($16::text[]) and (select ok from checked)
  ),
  stored as (
    insert into outcome_events (id, body, created_at)
    select * from unnest($46::text[], $47::text[], $48::bigint[])
    where (select ok from checked)
  )
  select ok from checked`;

/** One outcome's attempt row, as the statement's arrays take it. */
export interface AttemptValues {
  id: string;
  delivery_id: string;
  endpoint_id: string;
  attempt_number: number;
  trigger: string;
  status: string;
  response_status: number | null;
  response_body: string | null;
  request_headers: string | null;
  response_headers: string | null;
  error: string | null;
  duration_ms: number;
  created_at: number;
}

/** A delivery's state before the batch (as the plan assumed it) and after it. */
export interface DeliveryWrite {
  id: string;
  expect: { status: string; attempt_count: number; schedule_step: number; attempt_seq: number; tasks: number };
  added: number;
  status: string;
  schedule_step: number;
  attempt_seq: number;
  updated_at: number;
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
  owner: string;
  now: number;
  attempts: readonly AttemptValues[];
  /** Our tasks, with the lease end each claim wrote. */
  tasks: readonly { id: string; leaseUntil: number }[];
  /** Deliveries a 2xx delivered: their scheduled attempts go too. */
  delivered: readonly string[];
  deliveries: readonly DeliveryWrite[];
  /** Endpoints paused by an answer (a 429 or 503 with Retry-After): their unheld tasks wait until then. */
  holds: readonly { endpointId: string; until: number }[];
  /** Next scheduled attempts. */
  queue: readonly { id: string; delivery_id: string; endpoint_id: string; attempt_number: number; run_at: number }[];
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

export function completeStatement(p: CompleteParams): Statement {
  const { attempts: a, deliveries: d, queue: q, health: h } = p;
  return {
    name: 'herald_complete',
    text: COMPLETE,
    values: [
      p.owner,
      column(a, 'id'),
      column(a, 'delivery_id'),
      column(a, 'endpoint_id'),
      column(a, 'attempt_number'),
      column(a, 'trigger'),
      column(a, 'status'),
      column(a, 'response_status'),
      column(a, 'response_body'),
      column(a, 'error'),
      column(a, 'duration_ms'),
      column(a, 'created_at'),
      column(p.tasks, 'id'),
      column(p.tasks, 'leaseUntil'),
      p.delivered,
      column(d, 'id'),
      d.map((x) => x.expect.status),
      d.map((x) => x.expect.attempt_count),
      d.map((x) => x.expect.schedule_step),
      d.map((x) => x.expect.attempt_seq),
      d.map((x) => x.expect.tasks),
      column(d, 'added'),
      column(d, 'status'),
      column(d, 'schedule_step'),
      column(d, 'attempt_seq'),
      column(d, 'updated_at'),
      column(q, 'id'),
      column(q, 'delivery_id'),
      column(q, 'endpoint_id'),
      column(q, 'attempt_number'),
      column(q, 'run_at'),
      column(h, 'id'),
      h.map((x) => x.expect.status),
      h.map((x) => x.expect.failingSince),
      h.map((x) => x.expect.exhaustedAt),
      column(h, 'status'),
      column(h, 'failingSince'),
      column(h, 'exhaustedAt'),
      column(h, 'at'),
      p.healthy?.ids ?? [],
      p.healthy?.at ?? p.now,
      column(h, 'changed'),
      p.now,
      column(p.holds, 'endpointId'),
      column(p.holds, 'until'),
      column(p.events, 'id'),
      column(p.events, 'body'),
      column(p.events, 'created_at'),
      column(p.stops, 'endpointId'),
      column(p.stops, 'at'),
      column(a, 'request_headers'),
      column(a, 'response_headers'),
    ],
  };
}
