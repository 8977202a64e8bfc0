import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // The W3C trace context a message was emitted in (src/domain/trace-context.ts): the `traceparent` its
  // attempts descend from and the caller's `tracestate`, carried to every attempt. Null: the message was
  // emitted outside any trace, and its trace is derived from its id.
  await db.schema.alterTable('messages').addColumn('traceparent', 'text').execute();
  await db.schema.alterTable('messages').addColumn('tracestate', 'text').execute();
}
