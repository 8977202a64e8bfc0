import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // An endpoint's own retry schedule (decisions, "Delivery policy"): a JSON list of the durations as
  // given (`["5s", "1m"]`); null follows HERALD_RETRY_SCHEDULE.
  await db.schema.alterTable('endpoints').addColumn('retry_schedule', 'text').execute();
  // A message's deliver_at (epoch ms): its deliveries' first attempts wait until then; null: sent at once.
  await db.schema.alterTable('messages').addColumn('deliver_at', 'bigint').execute();
  // A background task's size when known at its start (a bulk replay counts its matches): progress is
  // `enqueued` of `total`.
  await db.schema.alterTable('background_tasks').addColumn('total', 'integer').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  // Without the columns, a waiting message goes on its first attempt's run_at, which is kept; an endpoint
  // follows the service's schedule.
  // Bulk replays and cancelled tasks are not known below: they end as failed, their work undone.
  await db
    .updateTable('background_tasks')
    .set({ status: 'failed' })
    .where((eb) => eb.or([eb('kind', '=', 'endpoint.bulk_replay'), eb('status', '=', 'cancelled')]))
    .execute();
  await db.schema.alterTable('background_tasks').dropColumn('total').execute();
  await db.schema.alterTable('messages').dropColumn('deliver_at').execute();
  await db.schema.alterTable('endpoints').dropColumn('retry_schedule').execute();
}
