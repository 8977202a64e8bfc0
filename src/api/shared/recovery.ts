import { conflict, invalid } from '../errors.js';
import { timeInput } from './time-input.js';
import type { Scope, Store } from '../../store/index.js';
import type { RecoverParams } from '../../store/background-tasks.js';
import type { BackgroundTaskRow, EndpointRow } from '../../store/schema.js';

// Recovering an endpoint (decisions: "Recovering an endpoint, background tasks"): every delivery of the
// endpoint that failed or was held while it was disabled, of messages created in a time range, gets one new
// manual attempt, in the background (src/background/runner.ts), followed with GET /background-tasks/{id}.
// Recovery is bounded per endpoint: one runs at a time, and a delivery whose attempt it queued is
// `pending` until that attempt ends, so asking again adds nothing until something fails again.

/**
 * Starts the recovery of an endpoint (the API's, the Svix surface's and the portal's route): `since`
 * before 1970 recovers from the beginning, since no message is older. At most one recovery of an endpoint
 * runs at a time: asked again while one runs, the answer is the running task when its range covers the
 * one asked for, and 409 naming it otherwise.
 */
export async function startRecovery(
  store: Store,
  scope: Scope,
  endpoint: Pick<EndpointRow, 'id' | 'status'>,
  body: { since: string; until?: string | undefined },
): Promise<BackgroundTaskRow> {
  const since = Math.max(0, timeInput('body', 'since', body.since)!);
  const until = timeInput('body', 'until', body.until) ?? null;
  if (until !== null && until <= 0)
    throw invalid('until is before 1970: no message is that old, so nothing would be recovered');
  if (until !== null && until <= since) throw invalid('until must be after since');
  if (endpoint.status === 'disabled')
    throw conflict('the endpoint is disabled: enable it (PATCH status "active") before recovering it');
  const { task, created } = await store.backgroundTasks.startRecover(scope, { endpointId: endpoint.id, since, until });
  if (created) {
    store.events.emit('background');
    return task;
  }
  const running = JSON.parse(task.params) as RecoverParams;
  const covers = running.since <= since && (running.until === null || (until !== null && until <= running.until));
  if (covers) return task;
  throw conflict(
    `a recovery of this endpoint is running (${task.id}, messages since ${new Date(running.since).toISOString()}${running.until === null ? '' : ` until ${new Date(running.until).toISOString()}`}); recover again once it has finished`,
  );
}
