import { endpointToApi } from '../serialize.js';
import type { Store } from '../../store/index.js';
import type { EndpointRow } from '../../store/schema.js';

// An endpoint as the native API, its operational endpoints and the portal show it.

/** An endpoint as the API and the portal show it: its headers opened, sensitive values redacted. */
export function endpointView(store: Store): (row: EndpointRow) => ReturnType<typeof endpointToApi> {
  return (row) => endpointToApi(row, store.endpoints.shownHeaders(row));
}

/**
 * A created endpoint with its secret, shown once: an HMAC endpoint's whsec_ secret. An Ed25519 endpoint's
 * private key is never shown; its public_key is on every read.
 */
export function withSecret<T extends { public_key: string | null }>(endpoint: T, secret: string) {
  return endpoint.public_key === null ? { ...endpoint, signing_secret: secret } : endpoint;
}
