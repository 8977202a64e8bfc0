// Endpoint health, as decided: `active` → `failing` when the most recent attempt failed, back to `active`
// on a success, and `disabled` on a 410 Gone or at the first failure after HERALD_DISABLE_AFTER of
// continuous failure in which a delivery has used up its attempts (that delivery's last attempt may come
// before the window ends or be the failure that passes it). An operator's `disabled` is never undone by an
// attempt's outcome.
export type EndpointStatus = 'active' | 'failing' | 'disabled';

export interface EndpointHealth {
  status: EndpointStatus;
  failingSince: number | null;
  /** When a delivery used up its attempts in this run of failures (null outside one). */
  exhaustedAt: number | null;
}

export interface AttemptOutcome {
  ok: boolean;
  responseStatus: number | null;
  /** True when this failure used up the delivery's last scheduled attempt. */
  exhausted: boolean;
  at: number;
}

export function nextEndpointHealth(
  current: EndpointHealth,
  outcome: AttemptOutcome,
  disableAfterMs: number,
): EndpointHealth {
  if (current.status === 'disabled') return current;
  if (outcome.ok) return { status: 'active', failingSince: null, exhaustedAt: null };
  const failingSince = current.failingSince ?? outcome.at;
  // An exhaustion before this run of failures began does not count (a process of the version before
  // exhausted_at may have started the run without clearing it).
  const earlierExhaustion =
    current.failingSince !== null && current.exhaustedAt !== null && current.exhaustedAt >= current.failingSince
      ? current.exhaustedAt
      : null;
  const exhaustedAt = outcome.exhausted ? outcome.at : earlierExhaustion;
  const health = { failingSince, exhaustedAt };
  if (outcome.responseStatus === 410) return { status: 'disabled', ...health };
  if (exhaustedAt !== null && outcome.at - failingSince >= disableAfterMs) return { status: 'disabled', ...health };
  return { status: 'failing', ...health };
}
