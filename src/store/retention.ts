import { idFloor } from '../domain/ids.js';
import { book } from './queue/index.js';
import { waitForRevivals } from './partitions/index.js';
import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.js';
import type { Executor, StoreContext } from './common.js';

export interface PurgeCounts {
  payloads: number;
  attempts: number;
  deliveries: number;
  messages: number;
  /** Event ids of messages that are gone (message_event_ids). */
  eventIds: number;
  idempotencyKeys: number;
  rateCounters: number;
  /** Expired portal links and kept answers (Svix surface). */
  expiredLinks: number;
  requestReplays: number;
  /** Audit log entries older than HERALD_AUDIT_RETENTION. */
  auditEntries: number;
}

/** Where each kind of history ends: the delivery log's and the audit log's. */
interface Cutoffs {
  data: number;
  audit: number;
}

/** Advisory lock key of the retention purge (any constant unique to Herald). */
const PURGE_LOCK = 0x4845524c; // "HERL"

/**
 * Most rows one purge transaction removes. An hour of history at 1,000 messages/s is millions of rows: in
 * one transaction that held SQLite's write lock (and, better-sqlite3 being synchronous, the event loop)
 * for as long as it took. In small transactions, emits and outcomes get the database between them.
 */
export const PURGE_BATCH = 1_000;

type Step = (trx: Executor, cutoffs: Cutoffs, now: number, limit: number) => Promise<{ numDeletedRows: bigint }>;

/**
 * What goes, in this order (each step relies on the ones before it being done): attempt history (the rows
 * of `attempts`; a first attempt recorded on its delivery's row goes with the delivery), settled
 * deliveries, payloads, messages, the event ids of messages gone, idempotency keys past their window, then the rate counters of endpoints
 * that no longer exist (deleting an endpoint removes its counter, but a worker still holding its claimed
 * attempts may count one more request and so write it again). A message with a delivery still
 * to be attempted (pending, or with an attempt queued such as a manual retry) keeps its payload and record,
 * whatever its age: a replay of an old message creates fresh deliveries that still need them.
 */
const STEPS: [keyof PurgeCounts, Step][] = [
  [
    'attempts',
    (trx, { data: cutoff }, _now, limit) =>
      trx
        .deleteFrom('attempts')
        // An attempt's id carries the time it finished, its created_at: the range is read by primary key.
        .where(
          'id',
          'in',
          trx.selectFrom('attempts').select('id').where('id', '<', idFloor('attempt', cutoff)).limit(limit),
        )
        .executeTakeFirst(),
  ],
  [
    'deliveries',
    (trx, { data: cutoff }, _now, limit) =>
      trx
        .deleteFrom('deliveries')
        .where(
          'id',
          'in',
          trx
            .selectFrom('deliveries')
            .select('id')
            // A delivery's id carries its creation time: the range is read by primary key (on PostgreSQL
            // in the old partitions only).
            .where('id', '<', idFloor('delivery', cutoff))
            .where('status', '!=', 'pending')
            .where(sql<boolean>`not ${book.hasQueued}`)
            .limit(limit),
        )
        .executeTakeFirst(),
  ],
  [
    'payloads',
    (trx, { data: cutoff }, now, limit) =>
      trx
        .deleteFrom('payloads')
        .where(
          'message_id',
          'in',
          trx
            .selectFrom('payloads')
            .select('message_id')
            .where((eb) => eb.or([eb('message_id', '<', idFloor('message', cutoff)), eb('expires_at', '<=', now)]))
            .where('message_id', 'not in', unsettled(trx))
            .limit(limit),
        )
        .executeTakeFirst(),
  ],
  [
    // A message goes once none of its deliveries is left (a recent replay's deliveries keep it readable).
    'messages',
    (trx, { data: cutoff }, _now, limit) =>
      trx
        .deleteFrom('messages')
        .where(
          'id',
          'in',
          trx
            .selectFrom('messages')
            .select('id')
            .where('id', '<', idFloor('message', cutoff))
            .where(({ not, exists, selectFrom }) =>
              not(
                exists(
                  selectFrom('deliveries')
                    .select('deliveries.id')
                    .whereRef('deliveries.message_id', '=', 'messages.id'),
                ),
              ),
            )
            .limit(limit),
        )
        .executeTakeFirst(),
  ],
  [
    // An event id stays taken while its message is kept.
    'eventIds',
    (trx, { data: cutoff }, _now, limit) =>
      trx
        .deleteFrom('message_event_ids')
        .where(
          'message_id',
          'in',
          trx
            .selectFrom('message_event_ids')
            .select('message_event_ids.message_id')
            .where('message_event_ids.message_id', '<', idFloor('message', cutoff))
            .where(({ not, exists, selectFrom }) =>
              not(
                exists(
                  selectFrom('messages')
                    .select('messages.id')
                    .whereRef('messages.id', '=', 'message_event_ids.message_id'),
                ),
              ),
            )
            .limit(limit),
        )
        .executeTakeFirst(),
  ],
  [
    'idempotencyKeys',
    (trx, _cutoff, now, limit) =>
      trx
        .deleteFrom('idempotency_keys')
        .where((eb) =>
          eb(
            eb.refTuple('org_id', 'livemode', 'key'),
            'in',
            trx
              .selectFrom('idempotency_keys')
              .select(['org_id', 'livemode', 'key'])
              .where('expires_at', '<=', now)
              .limit(limit)
              .$asTuple('org_id', 'livemode', 'key'),
          ),
        )
        .executeTakeFirst(),
  ],
  [
    'rateCounters',
    (trx, _cutoff, _now, limit) =>
      trx
        .deleteFrom('endpoint_rates')
        .where(
          'endpoint_id',
          'in',
          trx
            .selectFrom('endpoint_rates')
            .select('endpoint_rates.endpoint_id')
            .where('endpoint_rates.endpoint_id', 'not in', trx.selectFrom('endpoints').select('endpoints.id'))
            .limit(limit),
        )
        .executeTakeFirst(),
  ],
  [
    'expiredLinks',
    (trx, _cutoff, now, limit) =>
      trx
        .deleteFrom('portal_links')
        .where(
          'token_hash',
          'in',
          trx.selectFrom('portal_links').select('token_hash').where('expires_at', '<=', now).limit(limit),
        )
        .executeTakeFirst(),
  ],
  [
    'requestReplays',
    (trx, _cutoff, now, limit) =>
      trx
        .deleteFrom('request_replays')
        .where((eb) =>
          eb(
            eb.refTuple('org_id', 'livemode', 'key'),
            'in',
            trx
              .selectFrom('request_replays')
              .select(['org_id', 'livemode', 'key'])
              .where('expires_at', '<=', now)
              .limit(limit)
              .$asTuple('org_id', 'livemode', 'key'),
          ),
        )
        .executeTakeFirst(),
  ],
  [
    // Entries are time-ordered by id: the range is read by primary key.
    'auditEntries',
    (trx, { audit }, _now, limit) =>
      trx
        .deleteFrom('audit_log')
        .where(
          'id',
          'in',
          trx.selectFrom('audit_log').select('id').where('id', '<', idFloor('auditEntry', audit)).limit(limit),
        )
        .executeTakeFirst(),
  ],
];

/** Messages with a delivery still to be attempted. */
const unsettled = (trx: Executor) =>
  trx
    .selectFrom('deliveries')
    .select('deliveries.message_id')
    .where((eb) => eb.or([eb('deliveries.status', '=', 'pending'), book.hasQueued]));

/**
 * Removes what is older than the retention period (see STEPS), in transactions of at most `batch` rows.
 * `stopped` is asked between batches: a service that is closing ends the purge there (the next one goes on).
 */
export async function purgeExpired(
  ctx: StoreContext,
  retention: { retentionMs: number; auditRetentionMs: number },
  batch = PURGE_BATCH,
  stopped = () => false,
): Promise<PurgeCounts> {
  const now = ctx.now();
  const cutoffs = { data: now - retention.retentionMs, audit: now - retention.auditRetentionMs };
  const counts: PurgeCounts = {
    payloads: 0,
    attempts: 0,
    deliveries: 0,
    messages: 0,
    eventIds: 0,
    idempotencyKeys: 0,
    rateCounters: 0,
    expiredLinks: 0,
    requestReplays: 0,
    auditEntries: 0,
  };
  for (const [name, step] of STEPS) {
    for (;;) {
      const removed = await purgeBatch(ctx.db, ctx.dialect === 'postgres', REVIVABLE.has(name), (trx) =>
        step(trx, cutoffs, now, batch),
      );
      // Another process is purging: it does the rest.
      if (removed === null) return counts;
      counts[name] += removed;
      if (removed < batch) break;
      // Whatever waits for the database goes before the next batch.
      await new Promise((resolve) => setImmediate(resolve));
      if (stopped()) return counts;
    }
  }
  return counts;
}

/**
 * The steps whose rows a retry, a replay or a recovery may give new work. On PostgreSQL their batches wait
 * for the revivals under way and hold the next ones off (waitForRevivals): a delete checks a row's status
 * as its subquery read it, so a retry committed while the delete waited for the row would be deleted with
 * it, and a replay would name a message being deleted.
 */
const REVIVABLE = new Set<keyof PurgeCounts>(['deliveries', 'payloads', 'messages']);

/** One batch in its own transaction; null when another process holds the purge (PostgreSQL). */
async function purgeBatch(
  db: Kysely<Database>,
  postgres: boolean,
  revivable: boolean,
  remove: (trx: Executor) => Promise<{ numDeletedRows: bigint }>,
): Promise<number | null> {
  return db.transaction().execute(async (trx) => {
    // Every worker process runs the purge; on PostgreSQL one batch at a time is enough, and two at once
    // would only block or deadlock each other. The lock ends with the transaction.
    if (postgres) {
      const lock = await sql<{ got: boolean }>`select pg_try_advisory_xact_lock(${PURGE_LOCK}) as got`.execute(trx);
      if (!lock.rows[0]?.got) return null;
      if (revivable) await waitForRevivals(trx);
    }
    return Number((await remove(trx)).numDeletedRows);
  });
}
