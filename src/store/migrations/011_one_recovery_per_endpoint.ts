import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // A background task names what it works on (`subject_id`: the endpoint a recovery recovers), so that at
  // most one task of a kind runs per subject: two recoveries of one endpoint at once would each queue an
  // attempt for the same deliveries. Tasks made before this column have none and are not counted.
  await db.schema.alterTable('background_tasks').addColumn('subject_id', 'text').execute();
  await db.schema
    .createIndex('background_tasks_running_subject')
    .on('background_tasks')
    .columns(['kind', 'subject_id'])
    .unique()
    .where(sql.ref('status'), '=', 'running')
    .execute();
}
