// FIFO endpoints (decisions: `ordering: "fifo"`): the endpoint receives its deliveries in the order they
// were created, one request at a time. A delivery's first attempt is queued *parked*: its run_at lies
// beyond any real time, so no claim ever reads it. Only the endpoint's head (its earliest delivery that
// still has a scheduled attempt queued) is ever unparked; the head's retries are scheduled as usual, and
// the next delivery is unparked once the head has settled (delivered, out of attempts, or disabled:
// then it has no scheduled attempt left). Manual attempts are never parked and wait for nothing.

/** The run_at of a parked attempt (about the year 255,000): later than any time a claim compares with. */
export const PARKED_AT = 8e15;

export type Ordering = 'unordered' | 'fifo';

/** Whether a task's run_at is a parked one. */
export function isParked(runAt: number): boolean {
  return runAt >= PARKED_AT;
}
