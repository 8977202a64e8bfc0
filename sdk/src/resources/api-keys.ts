import { type List, listOf } from '../list.js';
import type { Transport } from '../transport.js';
import type { ApiKey, ApiKeyCreated, ApiKeyCreateParams, ApiKeyRevoked, PageParams } from '../types.js';

/** API keys of the calling key's organization and environment. */
export class ApiKeys {
  constructor(private readonly http: Transport) {}

  /** Creates a key; its plaintext `key` is in this answer only. */
  create(params: ApiKeyCreateParams = {}): Promise<ApiKeyCreated> {
    return this.http.request({ method: 'POST', path: '/api/v1/api-keys', body: params, retry: 'rate_limited' });
  }

  /** Keys, never their secret part. */
  list(params: PageParams = {}): List<ApiKey> {
    return listOf(this.http, '/api/v1/api-keys', params);
  }

  /** Revokes a key; it stops working at once. */
  revoke(id: string): Promise<ApiKeyRevoked> {
    return this.http.request({
      method: 'DELETE',
      path: `/api/v1/api-keys/${encodeURIComponent(id)}`,
      retry: 'rate_limited',
    });
  }
}
