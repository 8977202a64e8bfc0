import { Transport, type TransportOptions } from './transport.js';
import { Messages } from './resources/messages.js';
import { Applications } from './resources/applications.js';
import { Endpoints } from './resources/endpoints.js';
import { Deliveries } from './resources/deliveries.js';
import { EventTypes } from './resources/event-types.js';
import { ApiKeys } from './resources/api-keys.js';
import { BackgroundTasks } from './resources/background-tasks.js';
import { OperationalEndpoints } from './resources/operational-endpoints.js';
import type { DevBootstrap, DevBootstrapParams, Health } from './types.js';

export interface HeraldOptions extends Omit<TransportOptions, 'apiKey'> {
  /** `sk_test_…` (acts on the Test environment) or `sk_live_…` (Live). */
  apiKey: string;
}

/**
 * A client of one Herald service, acting with one API key (its organization and environment). Each
 * resource of /api/v1 is a property; a resource is a class over the Transport, added here with one line.
 */
export class Herald {
  readonly messages: Messages;
  readonly applications: Applications;
  readonly endpoints: Endpoints;
  readonly deliveries: Deliveries;
  readonly eventTypes: EventTypes;
  readonly apiKeys: ApiKeys;
  readonly backgroundTasks: BackgroundTasks;
  readonly operationalEndpoints: OperationalEndpoints;
  private readonly http: Transport;

  constructor(options: HeraldOptions) {
    if (typeof options?.apiKey !== 'string' || options.apiKey === '')
      throw new TypeError('Herald: apiKey is required (sk_test_… or sk_live_…)');
    this.http = new Transport(options);
    this.messages = new Messages(this.http);
    this.applications = new Applications(this.http);
    this.endpoints = new Endpoints(this.http);
    this.deliveries = new Deliveries(this.http);
    this.eventTypes = new EventTypes(this.http);
    this.apiKeys = new ApiKeys(this.http);
    this.backgroundTasks = new BackgroundTasks(this.http);
    this.operationalEndpoints = new OperationalEndpoints(this.http);
  }

  /** Liveness and database health (GET /healthz). */
  health(): Promise<Health> {
    return this.http.request({ method: 'GET', path: '/healthz', retry: 'safe' });
  }

  /** The API's OpenAPI 3 document, the one this SDK's types are generated from. */
  openapi(): Promise<Record<string, unknown>> {
    return this.http.request({ method: 'GET', path: '/api/v1/openapi.json', retry: 'safe' });
  }

  /**
   * Development mode only: creates an organization and answers its first Test and Live keys
   * (`test_key.key`, `live_key.key`). The route needs no key and does not exist in production mode.
   */
  static devBootstrap(
    options: Omit<HeraldOptions, 'apiKey'> = {},
    params: DevBootstrapParams = {},
  ): Promise<DevBootstrap> {
    const http = new Transport({ ...options, apiKey: null });
    return http.request({ method: 'POST', path: '/api/v1/dev/bootstrap', body: params, retry: 'rate_limited' });
  }
}
