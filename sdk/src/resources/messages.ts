import { type List, listOf } from '../list.js';
import type { Transport } from '../transport.js';
import type {
  DeliveryListItem,
  Message,
  MessageCreated,
  MessageCreateParams,
  MessageListParams,
  MessagePayload,
  PageParams,
  ReplayResult,
  SendTestParams,
  SendTestResult,
} from '../types.js';

export interface CreateOptions {
  /**
   * Dedupes the emit: a second emit with the same key returns the first message (`idempotent: true`)
   * instead of creating one. Without it (and without `idempotency_key` in the body) a random key is made,
   * so the SDK's own retries never emit twice.
   */
  idempotencyKey?: string;
}

export class Messages {
  constructor(private readonly http: Transport) {}

  /** Emits a message; retried on 429, 5xx and network errors with the same Idempotency-Key. */
  create(params: MessageCreateParams, options: CreateOptions = {}): Promise<MessageCreated> {
    const key = options.idempotencyKey ?? params.idempotency_key ?? `sdk_${crypto.randomUUID()}`;
    return this.http.request({
      method: 'POST',
      path: '/api/v1/messages',
      body: params,
      headers: { 'idempotency-key': key },
      retry: 'safe',
    });
  }

  /** Newest first; `for await` follows the cursors through every page. */
  list(params: MessageListParams = {}): List<Message> {
    return listOf(this.http, '/api/v1/messages', params);
  }

  get(id: string): Promise<Message> {
    return this.http.request({ method: 'GET', path: `/api/v1/messages/${encodeURIComponent(id)}`, retry: 'safe' });
  }

  /** The message's stored payload (reads of the message carry metadata only); 410 `payload_gone` once it is gone. */
  payload(id: string): Promise<MessagePayload> {
    return this.http.request({
      method: 'GET',
      path: `/api/v1/messages/${encodeURIComponent(id)}/payload`,
      retry: 'safe',
    });
  }

  /** New deliveries of the message for the endpoints subscribed now. */
  replay(id: string): Promise<ReplayResult> {
    return this.http.request({
      method: 'POST',
      path: `/api/v1/messages/${encodeURIComponent(id)}/replay`,
      retry: 'rate_limited',
    });
  }

  /** The message's deliveries. */
  deliveries(id: string, params: PageParams = {}): List<DeliveryListItem> {
    return listOf(this.http, `/api/v1/messages/${encodeURIComponent(id)}/deliveries`, params);
  }

  /** A sample event through the real pipeline (Test keys only). */
  sendTest(params: SendTestParams): Promise<SendTestResult> {
    return this.http.request({
      method: 'POST',
      path: '/api/v1/messages/send-test',
      body: params,
      retry: 'rate_limited',
    });
  }
}
