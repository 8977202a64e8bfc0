import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // An endpoint's circuit breaker (src/domain/circuit.ts): `circuit` its settings as given (JSON; null
  // follows the service), its state and, while open, until when; the cooldown last used (a failed probe
  // doubles it); a half-open probe's holder's time; and the current window's counts, kept from the first
  // failure on. None of these columns is indexed, so writing them is a HOT update on PostgreSQL.
  await db.schema.alterTable('endpoints').addColumn('circuit', 'text').execute();
  await db.schema
    .alterTable('endpoints')
    .addColumn('circuit_state', 'text', (c) => c.notNull().defaultTo('closed'))
    .execute();
  await db.schema.alterTable('endpoints').addColumn('circuit_open_until', 'bigint').execute();
  await db.schema.alterTable('endpoints').addColumn('circuit_cooldown_ms', 'bigint').execute();
  await db.schema.alterTable('endpoints').addColumn('circuit_probe_until', 'bigint').execute();
  await db.schema.alterTable('endpoints').addColumn('circuit_window_start', 'bigint').execute();
  await db.schema
    .alterTable('endpoints')
    .addColumn('circuit_window_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('endpoints')
    .addColumn('circuit_window_failures', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  // Deliveries an open circuit held wait only until their run_at, which the open circuit set: nothing to undo.
  for (const column of [
    'circuit_window_failures',
    'circuit_window_attempts',
    'circuit_window_start',
    'circuit_probe_until',
    'circuit_cooldown_ms',
    'circuit_open_until',
    'circuit_state',
    'circuit',
  ])
    await db.schema.alterTable('endpoints').dropColumn(column).execute();
}
