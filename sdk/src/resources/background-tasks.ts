import type { Transport } from '../transport.js';
import type { BackgroundTask } from '../types.js';

/** Work the service does after answering, such as an endpoint's recovery. */
export class BackgroundTasks {
  constructor(private readonly http: Transport) {}

  /** A task and its progress. */
  get(id: string): Promise<BackgroundTask> {
    return this.http.request({
      method: 'GET',
      path: `/api/v1/background-tasks/${encodeURIComponent(id)}`,
      retry: 'safe',
    });
  }
}
