import { formatDuration } from '../../domain/duration.js';
import { invalidField } from '../errors.js';
import { timeInput } from './time-input.js';

// A message's deliver_at (native) or deliverAt (Svix surface): its deliveries' first attempts wait until
// then. At most HERALD_MAX_DELIVER_AHEAD ahead, so no tenant parks work in the queue for longer than the
// operator allows; a time already past is now.

/** The time a message's first attempts wait for, in ms; null: now (absent, null or past). */
export function deliverAtInput(
  field: 'deliver_at' | 'deliverAt',
  value: string | null | undefined,
  now: number,
  maxAheadMs: number,
): number | null {
  const at = timeInput('body', field, value);
  if (at === undefined || at <= now) return null;
  if (at > now + maxAheadMs)
    throw invalidField(
      ['body', field],
      `${field} is more than ${formatDuration(maxAheadMs)} ahead (HERALD_MAX_DELIVER_AHEAD): ${value}`,
    );
  return at;
}
