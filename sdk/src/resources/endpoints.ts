import { type List, listOf } from '../list.js';
import type { Transport } from '../transport.js';
import type {
  BackgroundTask,
  Endpoint,
  EndpointCreated,
  EndpointCreateParams,
  EndpointListItem,
  EndpointListParams,
  EndpointStats,
  EndpointStatsParams,
  EndpointUpdateParams,
  RecoverParams,
  SecretRotated,
} from '../types.js';

const path = (id: string) => `/api/v1/endpoints/${encodeURIComponent(id)}`;

export class Endpoints {
  constructor(private readonly http: Transport) {}

  /** Creates an endpoint; its `signing_secret` (hmac) is in this answer only, `public_key` (ed25519) on every read. */
  create(params: EndpointCreateParams): Promise<EndpointCreated> {
    return this.http.request({ method: 'POST', path: '/api/v1/endpoints', body: params, retry: 'rate_limited' });
  }

  list(params: EndpointListParams = {}): List<EndpointListItem> {
    return listOf(this.http, '/api/v1/endpoints', params);
  }

  get(id: string): Promise<Endpoint> {
    return this.http.request({ method: 'GET', path: path(id), retry: 'safe' });
  }

  /** Updates an endpoint; status `disabled` stops deliveries, `active` re-enables it. */
  update(id: string, params: EndpointUpdateParams): Promise<Endpoint> {
    return this.http.request({ method: 'PATCH', path: path(id), body: params, retry: 'rate_limited' });
  }

  delete(id: string): Promise<void> {
    return this.http.request({ method: 'DELETE', path: path(id), retry: 'rate_limited' });
  }

  /** A new signing secret (or key pair); the previous one also signs until `previous_valid_until`. */
  rotateSecret(id: string): Promise<SecretRotated> {
    return this.http.request({ method: 'POST', path: `${path(id)}/rotate-secret`, retry: 'rate_limited' });
  }

  /**
   * Gives every failed or disabled delivery of the endpoint whose message was created in [since, until)
   * a new attempt, as a background task: follow it with `herald.backgroundTasks.get(task.id)`.
   */
  recover(id: string, params: RecoverParams): Promise<BackgroundTask> {
    return this.http.request({ method: 'POST', path: `${path(id)}/recover`, body: params, retry: 'rate_limited' });
  }

  /** Attempts per hour (successes, failures, p50 and p95 duration) over a window: by default the last 24 hours. */
  stats(id: string, params: EndpointStatsParams = {}): Promise<EndpointStats> {
    return this.http.request({ method: 'GET', path: `${path(id)}/stats`, query: params, retry: 'safe' });
  }
}
