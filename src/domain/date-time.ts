// Times a request names (RFC 3339 date-times) as milliseconds since the epoch. The request schemas check
// the syntax (`format: date-time`), which takes a leap second (`23:59:60Z`) that JavaScript's Date cannot
// represent, so a time is read here and one Date cannot read is refused rather than carried on as NaN.

/** A date-time's milliseconds since the epoch, or null when Date cannot read it (a leap second among them). */
export function timeOf(text: string): number | null {
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : null;
}

/** Why a field's date-time is refused: named, and with the one case the schema lets through. */
export const unreadableTime = (field: string) =>
  `${field} must be an RFC 3339 date-time Herald can read (a leap second, :60, is not taken)`;
