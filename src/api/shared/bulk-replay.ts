import { conflict, invalidField } from '../errors.js';
import { timeInput } from './time-input.js';
import type { Scope, Store } from '../../store/index.js';
import type { BulkReplayStatus, StatusCodeClass } from '../../store/background-tasks.js';
import type { BackgroundTaskRow, EndpointRow } from '../../store/schema.js';

// An endpoint's bulk replay (decisions, "Delivery policy"), as the native route and the Svix surface start
// it: each of the endpoint's deliveries of messages created in [since, until) that match the filters gets
// one new attempt, in the background (src/store/background-tasks.ts, bulkReplayBatch).

export interface BulkReplayInput {
  since: string;
  until?: string | null | undefined;
  eventTypes?: string[] | null | undefined;
  status?: BulkReplayStatus | null | undefined;
  statusCodeClass?: StatusCodeClass | null | undefined;
  channel?: string | null | undefined;
  tag?: string | null | undefined;
}

/**
 * Starts the bulk replay. `until` absent is now, so the task's range is fixed when it starts. At most one
 * bulk replay of an endpoint runs at a time: 409 naming the running one.
 */
export async function startBulkReplay(
  store: Store,
  scope: Scope,
  endpoint: Pick<EndpointRow, 'id' | 'status'>,
  input: BulkReplayInput,
): Promise<BackgroundTaskRow> {
  const since = Math.max(0, timeInput('body', 'since', input.since)!);
  const until = timeInput('body', 'until', input.until) ?? store.ctx.now();
  if (until <= since) throw invalidField(['body', 'since'], 'since must be before until');
  if (endpoint.status === 'disabled')
    throw conflict('the endpoint is disabled: enable it (status "active") before replaying to it');
  const { task, created } = await store.backgroundTasks.startBulkReplay(scope, {
    endpointId: endpoint.id,
    since,
    until,
    eventTypes: input.eventTypes ?? null,
    status: input.status ?? null,
    statusCodeClass: input.statusCodeClass ?? null,
    channel: input.channel ?? null,
    tag: input.tag ?? null,
  });
  if (!created)
    throw conflict(
      `a bulk replay of this endpoint is running (${task.id}): cancel it (POST /api/v1/background-tasks/${task.id}/cancel) or wait until it has finished`,
    );
  store.events.emit('background');
  return task;
}
