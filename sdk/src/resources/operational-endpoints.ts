import { type List, listOf } from '../list.js';
import type { Transport } from '../transport.js';
import type {
  OperationalEndpointCreated,
  OperationalEndpointCreateParams,
  OperationalEndpointListItem,
  OperationalEndpointListParams,
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

  delete(id: string): Promise<void> {
    return this.http.request({
      method: 'DELETE',
      path: `/api/v1/operational-endpoints/${encodeURIComponent(id)}`,
      retry: 'rate_limited',
    });
  }
}
