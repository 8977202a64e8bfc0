import type { Kysely } from 'kysely';

// An attempt names its endpoint, so an endpoint's attempts per hour (GET /api/v1/endpoints/{id}/stats, the
// console's and the portal's charts) are read from one index range, (endpoint_id, created_at, status),
// instead of joining every delivery the endpoint ever had; the status in the index answers the count
// without reading the table's rows (response bodies included). Attempts made before this migration take their
// delivery's endpoint; the column stays nullable so the migration needs no table rewrite.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('attempts').addColumn('endpoint_id', 'text').execute();
  await db
    .updateTable('attempts')
    .set((eb) => ({
      endpoint_id: eb
        .selectFrom('deliveries')
        .select('deliveries.endpoint_id')
        .whereRef('deliveries.id', '=', 'attempts.delivery_id'),
    }))
    .execute();
  await db.schema
    .createIndex('attempts_by_endpoint_time')
    .on('attempts')
    .columns(['endpoint_id', 'created_at', 'status'])
    .execute();
}
