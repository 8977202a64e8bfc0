import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';

// Fills an embedded store (already migrated, service stopped) with `count` pending deliveries whose only
// attempt is scheduled far in the future, or (`due`) due already, one per millisecond before now as after
// an outage: rows in `deliveries`, each with its first attempt queued on it, as the emit path writes them,
// all for one message and one endpoint of the org set up through the API.
export function insertBacklog(
  dataDir: string,
  count: number,
  ids: { orgId: string; appId: string; endpointId: string },
  when: 'future' | 'due' = 'future',
): number {
  const started = performance.now();
  const db = new SQLite(join(dataDir, 'herald.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  const now = Date.now();
  const future = now + 30 * 24 * 3600_000;
  const messageId = `evt_backlog${'0'.repeat(19)}`;
  db.prepare(
    'insert into messages (id, org_id, livemode, app_id, event_type, created_at) values (?, ?, 0, ?, ?, ?)',
  ).run(messageId, ids.orgId, ids.appId, 'invoice.paid', now);
  db.prepare('insert into payloads (message_id, body, created_at) values (?, ?, ?)').run(
    messageId,
    '{"backlog":true}',
    now,
  );
  const delivery = db.prepare(
    `insert into deliveries (id, org_id, livemode, app_id, message_id, endpoint_id, status, attempt_count, attempt_seq, schedule_step, created_at, updated_at,
       run_at, next_trigger, next_attempt, lease_owner, lease_until, queued_after)
     values (?, ?, 0, ?, ?, ?, 'pending', 0, 1, 0, ?, ?, ?, 'scheduled', 1, null, null, null)`,
  );
  // Ids sort before anything made now (prefix "0"), spread over the month so the due index is realistic.
  const batch = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const suffix = String(i).padStart(12, '0');
      const runAt = when === 'due' ? now - count + i : future + (i % 100_000) * 1000;
      delivery.run(`dlv_0backlog${suffix}`, ids.orgId, ids.appId, messageId, ids.endpointId, now, now, runAt);
    }
  });
  for (let from = 0; from < count; from += 50_000) batch(from, Math.min(count, from + 50_000));
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return (performance.now() - started) / 1000;
}

/**
 * Moves every queued attempt of a stopped-emitter store to `runAt` (epoch ms). The drains hold their
 * backlog in the future while worker processes start, then make it due at once, so that several workers
 * begin together and no worker's start-up is part of a drain's rate.
 */
export async function setBacklogRunAt(runAt: number, dataDir: string, databaseUrl?: string): Promise<void> {
  if (databaseUrl) {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      await client.query('update deliveries set run_at = $1 where run_at is not null', [runAt]);
    } finally {
      await client.end();
    }
    return;
  }
  const db = new SQLite(join(dataDir, 'herald.db'));
  try {
    db.pragma('busy_timeout = 10000');
    db.prepare('update deliveries set run_at = ? where run_at is not null').run(runAt);
  } finally {
    db.close();
  }
}
