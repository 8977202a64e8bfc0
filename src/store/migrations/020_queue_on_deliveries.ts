import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * PostgreSQL: the share of each new page of deliveries filled. A delivery gets a new version when claimed
 * (its lease) and when its outcome is recorded: with half of each page free, a claim of every row of a
 * page finds room on that page and rewrites no index (HOT); at 80% most claims of a full batch did not.
 */
const FILLFACTOR = 50;

/** Deliveries whose tasks are carried over at a time. */
const BATCH = 500;

interface OldTask {
  delivery_id: string;
  trigger: 'scheduled' | 'manual';
  attempt_number: number;
  run_at: number | string;
  lease_owner: string | null;
}

export async function up(db: Kysely<any>): Promise<void> {
  // A delivery's queue moves onto its own row (src/domain/queue-slot.ts): the attempt due next and the
  // lease of the worker making it, with the rare attempts waiting behind it as JSON. A claim then writes
  // the lease columns of a row it already has, which no index covers, instead of a row of its own.
  // One column per statement: SQLite adds no more at once.
  for (const [name, type] of COLUMNS) await db.schema.alterTable('deliveries').addColumn(name, type).execute();
  const now = Date.now();
  let after = '';
  for (;;) {
    const ids = (
      await db
        .selectFrom('delivery_tasks')
        .select('delivery_id')
        .distinct()
        .where('delivery_id', '>', after)
        .orderBy('delivery_id')
        .limit(BATCH)
        .execute()
    ).map((row) => row.delivery_id as string);
    if (ids.length === 0) break;
    after = ids[ids.length - 1]!;
    const tasks = (await db
      .selectFrom('delivery_tasks')
      .select(['delivery_id', 'trigger', 'attempt_number', 'run_at', 'lease_owner'])
      .where('delivery_id', 'in', ids)
      .execute()) as OldTask[];
    for (const id of ids) {
      const queue = carried(
        tasks.filter((t) => t.delivery_id === id),
        now,
      );
      await db.updateTable('deliveries').set(queue).where('id', '=', id).execute();
    }
  }
  await db.schema.dropTable('delivery_tasks').execute();
  // The due attempts in order (claims, nextDueAt), and one endpoint's (its top-up claims, FIFO heads).
  await sql`create index deliveries_due on deliveries (run_at, id) where run_at is not null`.execute(db);
  if (db.getExecutor().adapter instanceof PostgresAdapter)
    await sql`alter table deliveries set (fillfactor = ${sql.lit(FILLFACTOR)})`.execute(db);
  await sql`create index deliveries_due_by_endpoint on deliveries (endpoint_id, run_at) where run_at is not null`.execute(
    db,
  );
}

const COLUMNS = [
  ['run_at', 'bigint'],
  ['next_trigger', 'text'],
  ['next_attempt', 'integer'],
  ['lease_owner', 'text'],
  ['lease_until', 'bigint'],
  ['queued_after', 'text'],
] as const;

/**
 * A delivery's queue from its tasks: the one a worker holds is the head (its run_at was the lease end),
 * else the one due first; the others wait behind it (manual ones due as soon as they are the head).
 */
function carried(tasks: OldTask[], now: number) {
  const held = (t: OldTask) => t.lease_owner !== null && Number(t.run_at) > now;
  const sorted = [...tasks].sort((a, b) => Number(held(b)) - Number(held(a)) || Number(a.run_at) - Number(b.run_at));
  const [head, ...rest] = sorted;
  if (!head) return {};
  return {
    run_at: held(head) ? now : Number(head.run_at),
    next_trigger: head.trigger,
    next_attempt: head.attempt_number,
    lease_owner: held(head) ? head.lease_owner : null,
    lease_until: held(head) ? Number(head.run_at) : null,
    queued_after:
      rest.length === 0
        ? null
        : JSON.stringify(
            rest.map((t) => ({
              number: t.attempt_number,
              trigger: t.trigger,
              runAt: t.trigger === 'manual' ? null : Number(t.run_at),
            })),
          ),
  };
}

/**
 * Back to a table of tasks, one per queued attempt (the head, held or waiting, and each attempt behind
 * it), for a rollback to the release before.
 */
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('delivery_tasks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('delivery_id', 'text', (c) => c.notNull())
    .addColumn('endpoint_id', 'text', (c) => c.notNull())
    .addColumn('trigger', 'text', (c) => c.notNull())
    .addColumn('attempt_number', 'integer', (c) => c.notNull())
    .addColumn('run_at', 'bigint', (c) => c.notNull())
    .addColumn('lease_owner', 'text')
    .execute();
  const now = Date.now();
  let after = '';
  for (;;) {
    const rows = await db
      .selectFrom('deliveries')
      .select(['id', 'endpoint_id', ...COLUMNS.map(([name]) => name)])
      .where('run_at', 'is not', null)
      .where('id', '>', after)
      .orderBy('id')
      .limit(BATCH)
      .execute();
    if (rows.length === 0) break;
    after = rows[rows.length - 1]!.id;
    const tasks = rows.flatMap((row) => {
      const held = row.lease_owner !== null && Number(row.lease_until) > now;
      const task = (n: number, trigger: string, runAt: number, owner: string | null, i: number) => ({
        id: `tsk_${row.id}_${i}`,
        delivery_id: row.id,
        endpoint_id: row.endpoint_id,
        trigger,
        attempt_number: n,
        run_at: runAt,
        lease_owner: owner,
      });
      const waiting = row.queued_after === null ? [] : (JSON.parse(row.queued_after) as WaitingRow[]);
      return [
        task(
          Number(row.next_attempt),
          row.next_trigger,
          held ? Number(row.lease_until) : Number(row.run_at),
          held ? row.lease_owner : null,
          0,
        ),
        ...waiting.map((w, i) => task(w.number, w.trigger, w.runAt ?? now, null, i + 1)),
      ];
    });
    await db.insertInto('delivery_tasks').values(tasks).execute();
  }
  await db.schema.createIndex('delivery_tasks_due').on('delivery_tasks').columns(['run_at', 'id']).execute();
  await db.schema.createIndex('delivery_tasks_by_delivery').on('delivery_tasks').column('delivery_id').execute();
  await db.schema
    .createIndex('delivery_tasks_by_endpoint_due')
    .on('delivery_tasks')
    .columns(['endpoint_id', 'run_at'])
    .execute();
  await db.schema.dropIndex('deliveries_due').execute();
  await db.schema.dropIndex('deliveries_due_by_endpoint').execute();
  for (const [name] of COLUMNS) await db.schema.alterTable('deliveries').dropColumn(name).execute();
}

interface WaitingRow {
  number: number;
  trigger: string;
  runAt: number | null;
}
