import { type List, listOf } from '../list.js';
import type { Transport } from '../transport.js';
import type {
  Application,
  ApplicationCreated,
  ApplicationCreateParams,
  ApplicationListItem,
  ApplicationStats,
  ApplicationStatsParams,
  ApplicationUpdateParams,
  PageParams,
  PortalPathRotated,
} from '../types.js';

const path = (id: string) => `/api/v1/applications/${encodeURIComponent(id)}`;

/** Applications (one per customer); `id` may be the application's `app_…` id or its `uid`. */
export class Applications {
  constructor(private readonly http: Transport) {}

  /** Creates an application; `portal_path` is in this answer only. */
  create(params: ApplicationCreateParams): Promise<ApplicationCreated> {
    return this.http.request({ method: 'POST', path: '/api/v1/applications', body: params, retry: 'rate_limited' });
  }

  list(params: PageParams = {}): List<ApplicationListItem> {
    return listOf(this.http, '/api/v1/applications', params);
  }

  get(id: string): Promise<Application> {
    return this.http.request({ method: 'GET', path: path(id), retry: 'safe' });
  }

  update(id: string, params: ApplicationUpdateParams): Promise<Application> {
    return this.http.request({ method: 'PATCH', path: path(id), body: params, retry: 'rate_limited' });
  }

  /** Deletes the application and its endpoints. */
  delete(id: string): Promise<void> {
    return this.http.request({ method: 'DELETE', path: path(id), retry: 'rate_limited' });
  }

  /** A new `portal_path`; the previous one stops working at once. */
  rotatePortalPath(id: string): Promise<PortalPathRotated> {
    return this.http.request({ method: 'POST', path: `${path(id)}/rotate-portal-path`, retry: 'rate_limited' });
  }

  /**
   * Attempts to the application's endpoints per hour and event type over a window (by default the last
   * 24 hours): the 20 event types with the most attempts by name, the others summed as `other`.
   */
  stats(id: string, params: ApplicationStatsParams = {}): Promise<ApplicationStats> {
    return this.http.request({ method: 'GET', path: `${path(id)}/stats`, query: params, retry: 'safe' });
  }
}
