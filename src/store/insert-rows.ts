import { CompiledQuery } from 'kysely';
import type { InsertedRows } from './schema.js';
import type { Dialect } from './db.js';
import { chunks, type Executor } from './common.js';

// Multi-row inserts on the hot paths (emit, fan-out, attempt outcomes), without kysely's query builder.
// Building an insert through the builder costs ~20 µs plus ~6 µs per row (node objects, freezing, the
// compiler's visit) on every call; the SQL text only depends on the table, the columns and the row
// count, so it is made once per shape and reused, and only the parameters are new. SQLite's statement
// cache (db.ts) then also finds the prepared statement by the same text.

const texts = new Map<string, string>();
const MAX_SHAPES = 2000;

/** The SQL text for `key`, made by `build` the first time it is asked for. */
function cachedText(key: string, build: () => string): string {
  let text = texts.get(key);
  if (text === undefined) {
    text = build();
    if (texts.size >= MAX_SHAPES) texts.clear();
    texts.set(key, text);
  }
  return text;
}

function insertText(
  dialect: Dialect,
  table: string,
  columns: readonly string[],
  rowCount: number,
  suffix: string,
): string {
  return cachedText(`${dialect}|${table}|${columns.join(',')}|${rowCount}|${suffix}`, () => {
    let n = 0;
    const placeholder = dialect === 'postgres' ? () => `$${++n}` : () => '?';
    const row = () => `(${columns.map(placeholder).join(', ')})`;
    const values = Array.from({ length: rowCount }, row).join(', ');
    return `insert into "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) values ${values}${suffix}`;
  });
}

/**
 * Inserts `rows` with the columns of the first row (every row has the same fields: values are read by
 * name, so their order in each object does not matter), one statement per `chunks` part so no statement
 * passes the drivers' parameter limits.
 */
export async function insertRows<T extends keyof InsertedRows>(
  db: Executor,
  dialect: Dialect,
  table: T,
  rows: readonly InsertedRows[T][],
): Promise<void> {
  await insertChunks(db, dialect, table, rows, '');
}

/**
 * insertRows for rows that may have been written before (an outcome recorded again after its first
 * commit went unanswered): a row whose `key` exists already is left as it is. Returns the `returning`
 * column of the rows written now.
 */
export async function insertNewRows<T extends keyof InsertedRows, C extends keyof InsertedRows[T] & string>(
  db: Executor,
  dialect: Dialect,
  table: T,
  rows: readonly InsertedRows[T][],
  key: keyof InsertedRows[T] & string,
  returning: C,
): Promise<InsertedRows[T][C][]> {
  const written = await insertChunks(
    db,
    dialect,
    table,
    rows,
    ` on conflict ("${key}") do nothing returning "${returning}"`,
  );
  return written.map((row) => row[returning] as InsertedRows[T][C]);
}

async function insertChunks<T extends keyof InsertedRows>(
  db: Executor,
  dialect: Dialect,
  table: T,
  rows: readonly InsertedRows[T][],
  suffix: string,
): Promise<Record<string, unknown>[]> {
  if (rows.length === 0) return [];
  const columns = Object.keys(rows[0]!);
  const written: Record<string, unknown>[] = [];
  for (const part of pieces(dialect, rows)) {
    const parameters: unknown[] = new Array(part.length * columns.length);
    let i = 0;
    for (const row of part) for (const column of columns) parameters[i++] = row[column as keyof typeof row];
    const result = await db.executeQuery<Record<string, unknown>>(
      CompiledQuery.raw(insertText(dialect, table, columns, part.length, suffix), parameters),
    );
    for (const row of result.rows) written.push(row);
  }
  return written;
}

/**
 * `rows` in the parts a multi-row insert takes. SQLite keeps a statement prepared for each distinct text
 * (db.ts), and a multi-row insert's prepared program grows with its row count: one shape per count up to
 * a chunk's 500, for each table, would crowd the cache with large programs. In powers of two (40 rows: 32
 * then 8) a table has at most nine shapes, for at most one statement more per bit. On PostgreSQL a
 * statement is a round trip and nothing stays prepared: one per chunk.
 */
export function pieces<T>(dialect: Dialect, rows: readonly T[]): T[][] {
  if (dialect === 'postgres') return chunks([...rows]);
  const out: T[][] = [];
  for (let at = 0; at < rows.length; ) {
    const size = Math.min(MAX_SQLITE_PIECE, 2 ** Math.floor(Math.log2(rows.length - at)));
    out.push(rows.slice(at, at + size));
    at += size;
  }
  return out;
}

/** Rows of the largest SQLite insert: far below SQLite's 32,766 parameters for any of our tables. */
const MAX_SQLITE_PIECE = 256;

/** Most rows in one JSON parameter of `insertTogether` (a delivery row is ~400 characters of JSON). */
const JSON_PARAMETER_ROWS = 10_000;

/** Rows for one table of `insertTogether`. */
export type TableRows = {
  [T in keyof InsertedRows]: { table: T; rows: readonly InsertedRows[T][] };
}[keyof InsertedRows];

/**
 * Inserts rows into several tables, all or none. PostgreSQL: one statement of data-modifying CTEs,
 * atomic by itself, so a batch needs neither a transaction nor a round trip per table (on a busy machine
 * each round trip is milliseconds); each table's rows go as one JSON parameter read with
 * `json_populate_recordset` (or several, of JSON_PARAMETER_ROWS each: a fan-out to thousands of
 * endpoints must not pass V8's longest string), so no row count reaches the parameter limit and the text
 * only depends on the tables, the columns and the number of parameters. SQLite has no data-modifying CTEs:
 * one insertRows per table, in the caller's transaction or in one of its own.
 */
export async function insertTogether(db: Executor, dialect: Dialect, parts: readonly TableRows[]): Promise<void> {
  const present = parts.filter((part) => part.rows.length > 0);
  if (dialect === 'sqlite') {
    // insertRows may take several statements even for one table (chunks).
    if (!db.isTransaction && present.length > 0)
      return db.transaction().execute((trx) => insertTogether(trx, dialect, present));
    for (const part of present) await insertRows(db, dialect, part.table, part.rows);
    return;
  }
  if (present.length === 0) return;
  const pieces = present.flatMap((part) =>
    chunks([...part.rows], JSON_PARAMETER_ROWS).map((rows) => ({ table: part.table, rows })),
  );
  const shapes = pieces.map((piece) => ({ table: piece.table, columns: Object.keys(piece.rows[0]!) }));
  const text = cachedText(`together|${shapes.map((s) => `${s.table}(${s.columns.join(',')})`).join('|')}`, () => {
    const inserts = shapes.map(({ table, columns }, i) => {
      const list = columns.map((c) => `"${c}"`).join(', ');
      return `insert into "${table}" (${list}) select ${list} from json_populate_recordset(null::"${table}", $${i + 1}::json)`;
    });
    const last = inserts.pop()!;
    return inserts.length === 0
      ? last
      : `with ${inserts.map((insert, i) => `"part_${i}" as (${insert})`).join(', ')} ${last}`;
  });
  await db.executeQuery(
    CompiledQuery.raw(
      text,
      pieces.map((piece) => JSON.stringify(piece.rows)),
    ),
  );
}
