import type { EndpointStatus } from '../domain/endpoint-state.js';
import { newId } from '../domain/ids.js';
import type { DeliveryRow, MessageRow, TaskRow } from './schema.js';

/**
 * A message's new delivery to one endpoint and its first attempt, queued at `runAt`. A disabled endpoint's
 * delivery is `disabled` with no attempt (enabling the endpoint queues it); a parked one (a FIFO endpoint's,
 * fifo.ts) has its attempt queued at PARKED_AT and no next attempt time to show until it is unparked.
 */
export function newDelivery(
  message: Pick<MessageRow, 'id' | 'org_id' | 'livemode' | 'app_id'>,
  endpoint: { id: string; status: EndpointStatus },
  runAt: number,
  now: number,
  parked = false,
): { delivery: DeliveryRow; task: TaskRow | null } {
  const disabled = endpoint.status === 'disabled';
  const delivery: DeliveryRow = {
    id: newId('delivery', now),
    org_id: message.org_id,
    livemode: message.livemode,
    app_id: message.app_id,
    message_id: message.id,
    endpoint_id: endpoint.id,
    status: disabled ? 'disabled' : 'pending',
    attempt_count: 0,
    attempt_seq: disabled ? 0 : 1,
    schedule_step: 0,
    next_attempt_at: disabled || parked ? null : runAt,
    created_at: now,
    updated_at: now,
  };
  const task: TaskRow | null = disabled
    ? null
    : {
        id: newId('task', now),
        delivery_id: delivery.id,
        endpoint_id: endpoint.id,
        trigger: 'scheduled',
        attempt_number: 1,
        run_at: runAt,
        lease_owner: null,
      };
  return { delivery, task };
}
