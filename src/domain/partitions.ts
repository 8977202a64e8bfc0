import { type IdKind, idFloor, idTime } from './ids.js';

// PostgreSQL keeps the tables that grow with traffic as range partitions of their time-ordered ids
// (docs/design/partitions.md). These are the rules: which tables, where a partition's range starts and
// ends, which ranges to make ahead of now, and which are old enough to drop. The SQL is the store's
// (src/store/partitions/).

/** A partitioned table: its partition key (an id column) and the kind of id in it. */
export interface PartitionedTable {
  table: 'messages' | 'payloads' | 'deliveries' | 'attempts';
  key: 'id' | 'message_id';
  kind: IdKind;
}

/**
 * The tables that grow with traffic. A delivery's id carries the time of its emit (or replay), a
 * payload's key its message's, an attempt's the time it finished: a day's rows of all four land in the
 * same day's partitions, and each can be dropped once its whole range is past the retention period.
 */
export const PARTITIONED: readonly PartitionedTable[] = [
  { table: 'messages', key: 'id', kind: 'message' },
  { table: 'payloads', key: 'message_id', kind: 'message' },
  { table: 'deliveries', key: 'id', kind: 'delivery' },
  { table: 'attempts', key: 'id', kind: 'attempt' },
];

/** A partition's range of times in ms, `from` included, `to` not; a null `from` is unbounded (the legacy table). */
export interface TimeRange {
  from: number | null;
  to: number;
}

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;

/** The first interval boundary after `ms` (boundaries are multiples of the interval since the epoch, in UTC). */
export function boundaryAfter(ms: number, intervalMs: number): number {
  return (Math.floor(ms / intervalMs) + 1) * intervalMs;
}

/**
 * Where the existing table ends when it becomes the first partition (`herald partition`): the next hour. Rows
 * written until then still go to it; from there on each interval has its partition.
 */
export function legacyEnd(now: number): number {
  return boundaryAfter(now, HOUR_MS);
}

/**
 * The ranges to make so that partitions cover every time from the last one's end (`lastEnd`) through
 * `ahead` whole intervals after the current one. After a long pause (no worker made partitions), the gap
 * up to the current interval becomes one partition (nothing was written into it but what the default
 * partition caught), and a last end that is not on a boundary is followed by a short range up to one.
 */
export function rangesToMake(lastEnd: number, now: number, intervalMs: number, ahead: number): TimeRange[] {
  const current = Math.floor(now / intervalMs) * intervalMs;
  const until = current + (ahead + 1) * intervalMs;
  const ranges: TimeRange[] = [];
  let from = lastEnd;
  while (from < until) {
    const to = from < current ? current : boundaryAfter(from, intervalMs);
    ranges.push({ from, to });
    from = to;
  }
  return ranges;
}

/** True when every row a range can hold is older than the retention period. */
export function expired(range: TimeRange, now: number, retentionMs: number): boolean {
  return range.to <= now - retentionMs;
}

/** A partition's name: its table and the UTC time its range starts, such as `deliveries_p20261203t0000`. */
export function partitionName(table: PartitionedTable['table'], from: number): string {
  const iso = new Date(from).toISOString(); // 2026-12-03T00:00:00.000Z
  return `${table}_p${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}t${iso.slice(11, 13)}${iso.slice(14, 16)}`;
}

/** The first partition: the table as it was before `herald partition`, attached as it is. */
export const legacyName = (table: PartitionedTable['table']) => `${table}_legacy`;

/** The partition that catches a row no range covers (reported by `herald_default_partition_rows`). */
export const defaultName = (table: PartitionedTable['table']) => `${table}_default`;

/** The id bounds of a range for a table's key: `[idFloor(from), idFloor(to))`, null for an unbounded start. */
export function idBounds(table: PartitionedTable, range: TimeRange): { from: string | null; to: string } {
  return {
    from: range.from === null ? null : idFloor(table.kind, range.from),
    to: idFloor(table.kind, range.to),
  };
}

/** A partition bound as PostgreSQL writes it (`pg_get_expr(relpartbound)`), back as times; null: the default. */
export function rangeOfBound(bound: string): TimeRange | null {
  if (/^DEFAULT$/i.test(bound.trim())) return null;
  const match = /FROM \((MINVALUE|'([^']+)')\) TO \('([^']+)'\)/i.exec(bound);
  if (!match) throw new Error(`not a range partition bound: ${bound}`);
  const to = idTime(match[3]!);
  const from = match[2] === undefined ? null : idTime(match[2]);
  if (to === null || (match[2] !== undefined && from === null)) throw new Error(`not an id bound: ${bound}`);
  return { from, to };
}
