import { timeOf, unreadableTime } from '../../domain/date-time.js';
import { invalidField } from '../errors.js';

// Every date-time a route takes from its query or body is read here, so none reaches the store as NaN:
// one Date cannot read is 400 `invalid_request` naming the field (422 naming it on the Svix surface).

/** Where a field lies: the request part, as the Svix surface's `loc` names it. */
export type Part = 'query' | 'body';

/** The milliseconds of a date-time field; undefined when absent (or null). */
export function timeInput(part: Part, field: string, value: string | null | undefined): number | undefined {
  if (value === undefined || value === null) return undefined;
  const ms = timeOf(value);
  if (ms === null) throw invalidField([part, field], unreadableTime(field));
  return ms;
}
