import { type List, listOf } from '../list.js';
import type { Transport } from '../transport.js';
import type { Delivery, DeliveryListItem, DeliveryListParams, DeliveryRetried } from '../types.js';

const path = (id: string) => `/api/v1/deliveries/${encodeURIComponent(id)}`;

export class Deliveries {
  constructor(private readonly http: Transport) {}

  /** Deliveries, filtered by message, endpoint, application or status. */
  list(params: DeliveryListParams = {}): List<DeliveryListItem> {
    return listOf(this.http, '/api/v1/deliveries', params);
  }

  /** A delivery with its most recent attempts, newest first. */
  get(id: string): Promise<Delivery> {
    return this.http.request({ method: 'GET', path: path(id), retry: 'safe' });
  }

  /** Queues one more attempt of the delivery. */
  retry(id: string): Promise<DeliveryRetried> {
    return this.http.request({ method: 'POST', path: `${path(id)}/retry`, retry: 'rate_limited' });
  }
}
