import { type List, listOf } from '../list.js';
import type { Transport } from '../transport.js';
import type {
  EventType,
  EventTypeCreateParams,
  EventTypeListItem,
  EventTypeUpdateParams,
  PageParams,
} from '../types.js';

const path = (name: string) => `/api/v1/event-types/${encodeURIComponent(name)}`;

/** The environment's event catalog, by event type name. */
export class EventTypes {
  constructor(private readonly http: Transport) {}

  create(params: EventTypeCreateParams): Promise<EventType> {
    return this.http.request({ method: 'POST', path: '/api/v1/event-types', body: params, retry: 'rate_limited' });
  }

  list(params: PageParams = {}): List<EventTypeListItem> {
    return listOf(this.http, '/api/v1/event-types', params);
  }

  get(name: string): Promise<EventType> {
    return this.http.request({ method: 'GET', path: path(name), retry: 'safe' });
  }

  /** Updates a catalog entry; a new example or schema bumps its version. */
  update(name: string, params: EventTypeUpdateParams): Promise<EventType> {
    return this.http.request({ method: 'PATCH', path: path(name), body: params, retry: 'rate_limited' });
  }
}
