// Endpoint health, as decided: `active` → `failing` when the most recent attempt failed, back to `active`
// on a success, and `disabled` on a 410 Gone or after HERALD_DISABLE_AFTER of continuous failure once a
// delivery has used up its attempts. An operator's `disabled` is never undone by an attempt's outcome.
export type EndpointStatus = 'active' | 'failing' | 'disabled';

export interface EndpointHealth {
  status: EndpointStatus;
  failingSince: number | null;
}

export interface AttemptOutcome {
  ok: boolean;
  responseStatus: number | null;
  /** True when this failure used up the delivery's last scheduled attempt. */
  exhausted: boolean;
  at: number;
}

export function nextEndpointHealth(current: EndpointHealth, outcome: AttemptOutcome, disableAfterMs: number): EndpointHealth {
  if (current.status === 'disabled') return current;
  if (outcome.ok) return { status: 'active', failingSince: null };
  const failingSince = current.failingSince ?? outcome.at;
  if (outcome.responseStatus === 410) return { status: 'disabled', failingSince };
  if (outcome.exhausted && outcome.at - failingSince >= disableAfterMs) return { status: 'disabled', failingSince };
  return { status: 'failing', failingSince };
}
