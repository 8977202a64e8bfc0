import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // 1 when the endpoint's URL was chosen in a customer portal: its deliveries then reach public addresses
  // only, in Test too (a portal customer's receiver is not on the operator's network). Endpoints made
  // before this column keep the rule of their environment.
  await db.schema
    .alterTable('endpoints')
    .addColumn('public_only', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}
