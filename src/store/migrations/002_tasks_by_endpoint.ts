import type { Kysely } from 'kysely';

// Lets a worker top up one endpoint's share with a claim that reads only that endpoint's due tasks.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('delivery_tasks_by_endpoint_due')
    .on('delivery_tasks')
    .columns(['endpoint_id', 'run_at'])
    .execute();
}
