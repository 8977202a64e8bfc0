import pg from 'pg';

// PostgreSQL parses, analyses and plans every statement it is sent without a name, each time. Herald sends
// the same few statements over and over (the claim, an emit batch's reads and write, outcomes); named, a
// statement is parsed and analysed once per connection, and planned once where PostgreSQL finds after
// five runs that a generic plan is as good as the custom ones (the claim keeps custom plans). Planning
// was about three times the execution of an emit batch's reads; in paired runs one PostgreSQL worker
// delivered ~10% more per second (docs/benchmarks.md). Prepared statements
// belong to a server session, so a pooler in front must keep sessions (PgBouncer session mode, which
// LISTEN needs anyway).

/**
 * Names per connection at most: each holds its parse tree and plans in the server session (the claim,
 * the largest, ~150 KB), so a connection holds at most a few MB of them.
 */
export const MAX_NAMED_PER_CONNECTION = 50;
/** Statements seen once (not yet named) remembered per connection, at most; forgotten all at once past it. */
const MAX_SEEN_ONCE = 1_000;
/**
 * SQLSTATE of "cached plan must not change result type": a table the statement reads changed shape
 * (a newer version's migration while this process runs). The name is dropped and the text prepared
 * again under a new one (the old one stays allocated until the connection closes); the statement that
 * failed is not retried here: the caller sees the error, as with a dropped connection.
 */
const FEATURE_NOT_SUPPORTED = '0A000';

let namesGiven = 0;

/**
 * A pg client that names a statement the second time its text comes through on this connection, so
 * one-off texts (an `in` list of an unusual length) take no name. Only the form kysely uses, a text with
 * its values and no callback, is named; every other call passes through unchanged.
 */
export class PreparingClient extends pg.Client {
  private readonly names = new Map<string, string>();
  private readonly seenOnce = new Set<string>();

  // pg's query() has many overloads; this one stands for all of them.
  override query(...args: any[]): any {
    const [text, values, callback] = args;
    if (typeof text !== 'string' || !Array.isArray(values) || callback !== undefined) return super.query(...(args as [string]));
    const name = this.nameFor(text);
    if (name === undefined) return super.query(text, values);
    return super.query({ name, text, values }).catch((error: { code?: string }) => {
      if (error?.code === FEATURE_NOT_SUPPORTED) this.names.delete(text);
      throw error;
    });
  }

  private nameFor(text: string): string | undefined {
    const known = this.names.get(text);
    if (known !== undefined || this.names.size >= MAX_NAMED_PER_CONNECTION) return known;
    if (!this.seenOnce.has(text)) {
      if (this.seenOnce.size >= MAX_SEEN_ONCE) this.seenOnce.clear();
      this.seenOnce.add(text);
      return undefined;
    }
    this.seenOnce.delete(text);
    const name = `herald_${namesGiven++}`;
    this.names.set(text, name);
    return name;
  }
}
