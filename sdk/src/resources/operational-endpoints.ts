import { type List, listOf } from '../list.js';
import type { Transport } from '../transport.js';
import type {
  OperationalEndpoint,
  OperationalEndpointCreated,
  OperationalEndpointCreateParams,
  OperationalEndpointListItem,
  OperationalEndpointListParams,
  OperationalEndpointUpdateParams,
} from '../types.js';

/**
 * Receivers of Herald's own events about this environment (endpoint.created, message.attempt.failing, …),
 * signed like any webhook: verify them with `Webhook` and the `signing_secret` that create answers once.
 */
export class OperationalEndpoints {
  constructor(private readonly http: Transport) {}

  create(params: OperationalEndpointCreateParams): Promise<OperationalEndpointCreated> {
    return this.http.request({
      method: 'POST',
      path: '/api/v1/operational-endpoints',
      body: params,
      retry: 'rate_limited',
    });
  }

  list(params: OperationalEndpointListParams = {}): List<OperationalEndpointListItem> {
    return listOf(this.http, '/api/v1/operational-endpoints', params);
  }

  /** Updates one; status `active` re-enables one that a 410 or repeated failures disabled. */
  update(id: string, params: OperationalEndpointUpdateParams): Promise<OperationalEndpoint> {
    return this.http.request({
      method: 'PATCH',
      path: `/api/v1/operational-endpoints/${encodeURIComponent(id)}`,
      body: params,
      retry: 'rate_limited',
    });
  }

  delete(id: string): Promise<void> {
    return this.http.request({
      method: 'DELETE',
      path: `/api/v1/operational-endpoints/${encodeURIComponent(id)}`,
      retry: 'rate_limited',
    });
  }
}
