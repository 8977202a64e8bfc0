import { transformationOf } from '../store/endpoints.js';
import type {
  ApiKeyRow,
  AuditEntryRow,
  ApplicationRow,
  AttemptRow,
  BackgroundTaskRow,
  EndpointRow,
  EventTypeRow,
  MessageRow,
} from '../store/schema.js';
import type { Page } from '../store/common.js';
import type { DeliveryRead } from '../store/deliveries.js';
import { KEY_PREFIX } from '../domain/secrets.js';
import { messageTrace } from '../domain/trace-context.js';
import { parseHeaderBlock, REDACTED } from '../domain/headers.js';
import { sentRequestHeaders } from '../domain/request-headers.js';
import { type AuthSettings, shownAuth } from '../domain/endpoint-auth.js';
import { isDestinationType, shownConfig, shownUrl, storedDestination } from '../domain/destinations.js';
import { shownSchedule } from '../domain/retry-schedule.js';
import type { CircuitInput } from '../domain/circuit.js';

// Stored rows to API objects. Times leave as ISO 8601 strings; 0/1 flags as booleans; JSON text as JSON.

export const iso = (ms: number) => new Date(ms).toISOString();
const isoOrNull = (ms: number | null) => (ms === null ? null : iso(Number(ms)));

export const portalPath = (token: string) => `/portal/${token}`;

export function list<Row, Out>(page: Page<Row>, toApi: (row: Row) => Out) {
  return { object: 'list' as const, data: page.items.map(toApi), has_more: page.hasMore, next_cursor: page.nextCursor };
}

export const messageToApi = (m: MessageRow) => ({
  id: m.id,
  object: 'message' as const,
  event_type: m.event_type,
  app_id: m.app_id,
  channels: m.channels === null ? [] : (JSON.parse(m.channels) as string[]),
  tags: m.tags === null ? [] : (JSON.parse(m.tags) as string[]),
  trace_id: messageTrace(m.id, m.traceparent, m.tracestate).traceId,
  deliver_at: m.deliver_at === null ? null : iso(m.deliver_at),
  created_at: iso(m.created_at),
});

/** A message with its stored payload (JSON text), as GET /api/v1/messages/{id}/payload answers. */
export const messagePayloadToApi = (m: MessageRow, payloadJson: string) => ({
  id: m.id,
  object: 'message_payload' as const,
  app_id: m.app_id,
  event_type: m.event_type,
  payload: JSON.parse(payloadJson) as Record<string, unknown>,
  created_at: iso(m.created_at),
});

export const applicationToApi = (a: ApplicationRow) => ({
  id: a.id,
  object: 'application' as const,
  name: a.name,
  uid: a.uid,
  created_at: iso(a.created_at),
  updated_at: iso(a.updated_at),
});

/** An application with its portal_path: where the token is at hand (create and rotate-portal-path). */
export const applicationWithPortalPath = (a: ApplicationRow & { portalToken: string }) => ({
  ...applicationToApi(a),
  portal_path: portalPath(a.portalToken),
});

/** An endpoint; `headers` and `sensitive_headers` as reads show them (Endpoints.shownHeaders). */
export const endpointToApi = (e: EndpointRow, shown: { headers: Record<string, string>; sensitive: string[] }) => {
  const destination = destinationToApi(e);
  return {
    id: e.id,
    object: 'endpoint' as const,
    app_id: e.app_id,
    uid: e.uid,
    url: destination.url,
    status: e.status,
    event_types: JSON.parse(e.event_types) as string[],
    channels: e.channels === null ? [] : (JSON.parse(e.channels) as string[]),
    filter: e.filter === null ? null : (JSON.parse(e.filter) as Record<string, unknown>),
    description: e.description,
    headers: shown.headers,
    sensitive_headers: shown.sensitive,
    rate_limit: e.rate_limit,
    retry_schedule: shownSchedule(e.retry_schedule),
    circuit: e.circuit === null ? null : (JSON.parse(e.circuit) as CircuitInput),
    circuit_state: e.circuit_state,
    circuit_open_until: e.circuit_open_until === null ? null : iso(e.circuit_open_until),
    ordering: e.ordering,
    signature_type: e.signature_type,
    public_key: e.public_key,
    tls: tlsToApi(e),
    auth: e.auth === null ? null : shownAuth(JSON.parse(e.auth) as AuthSettings),
    type: e.type,
    config: destination.config,
    transformation: transformationToApi(e),
    created_at: iso(e.created_at),
    updated_at: iso(e.updated_at),
  };
};

/** An endpoint's transformation as reads show it (null: none was ever set). */
export function transformationToApi(
  e: EndpointRow,
): { code: string | null; enabled: boolean; updated_at: string } | null {
  const transformation = transformationOf(e);
  return transformation === null
    ? null
    : { code: transformation.code, enabled: transformation.enabled, updated_at: iso(transformation.updatedAt) };
}

/** A destination's config and URL as reads show them: every field, its secrets redacted. */
function destinationToApi(e: EndpointRow): { url: string; config: Record<string, unknown> | null } {
  const stored = storedDestination(e.destination);
  if (stored === null || !isDestinationType(e.type)) return { url: e.url, config: null };
  return {
    url: shownUrl(e.url, stored.sealed.includes('password')),
    config: shownConfig(e.type, stored.settings, stored.sealed),
  };
}

/** An endpoint's TLS settings as reads show them: the client key redacted, the certificate's expiry added. */
function tlsToApi(e: EndpointRow) {
  if (e.tls_client_cert === null && e.tls_ca === null) return null;
  return {
    client_cert: e.tls_client_cert,
    client_key: e.tls_client_key_sealed === null ? null : REDACTED,
    ca: e.tls_ca,
    client_cert_not_after: isoOrNull(e.tls_client_cert_not_after),
  };
}

/** An attempt as lists show it: without the receiver's answer, which is read with its delivery alone. */
export const attemptSummaryToApi = (a: AttemptRow) => ({
  attempt_number: a.attempt_number,
  trigger: a.trigger,
  status: a.status,
  response_status: a.response_status,
  error: a.error,
  duration_ms: a.duration_ms,
  created_at: iso(a.created_at),
});

/**
 * An attempt of the message `messageId` with what was sent and what came back: its headers (secrets
 * redacted; those an attempt keeps by name only read back, sentRequestHeaders) and the receiver's answer.
 */
export const attemptToApi = (a: AttemptRow, messageId: string) => ({
  ...attemptSummaryToApi(a),
  request_headers:
    a.request_headers === null ? null : parseHeaderBlock(sentRequestHeaders(a.request_headers, messageId)),
  response_headers: a.response_headers === null ? null : parseHeaderBlock(a.response_headers),
  response_body: a.response_body,
  request: madeRequest(a),
});

/** The request an attempt's transformation made (method, URL, body as sent); null: the plain request. */
export function madeRequest(a: Pick<AttemptRow, 'request'>): { method: string; url: string; body: string } | null {
  return a.request === null ? null : (JSON.parse(a.request) as { method: string; url: string; body: string });
}

export const deliveryToApi = (d: DeliveryRead) => ({
  id: d.id,
  object: 'delivery' as const,
  message_id: d.message_id,
  endpoint_id: d.endpoint_id,
  event_type: d.event_type,
  status: d.status,
  attempt_count: d.attempt_count,
  next_attempt_at: isoOrNull(d.next_attempt_at),
  created_at: iso(d.created_at),
  updated_at: iso(d.updated_at),
});

export const eventTypeToApi = (e: EventTypeRow) => ({
  name: e.name,
  object: 'event_type' as const,
  description: e.description,
  version: e.version,
  example_json: JSON.parse(e.example_json) as Record<string, unknown>,
  schema: e.schema_json === null ? null : (JSON.parse(e.schema_json) as Record<string, unknown>),
  created_at: iso(e.created_at),
  updated_at: iso(e.updated_at),
});

export const apiKeyToApi = (k: ApiKeyRow) => ({
  id: k.id,
  object: 'api_key' as const,
  name: k.name,
  prefix: k.livemode ? KEY_PREFIX.live : KEY_PREFIX.test,
  livemode: Boolean(k.livemode),
  role: k.role,
  app_ids: k.app_ids === null ? null : (JSON.parse(k.app_ids) as string[]),
  expires_at: isoOrNull(k.expires_at),
  created_at: iso(k.created_at),
  revoked_at: isoOrNull(k.revoked_at),
});

export const auditEntryToApi = (a: AuditEntryRow) => ({
  id: a.id,
  object: 'audit_entry' as const,
  actor: { type: a.actor_type, id: a.actor_id },
  action: a.action,
  resource: { type: a.resource_type, id: a.resource_id },
  changes: JSON.parse(a.changes) as Record<string, unknown[]>,
  request_id: a.request_id,
  created_at: iso(a.created_at),
});

export const backgroundTaskToApi = (b: BackgroundTaskRow) => ({
  object: 'background_task' as const,
  id: b.id,
  kind: b.kind,
  status: b.status,
  created_at: iso(b.created_at),
  updated_at: iso(b.updated_at),
  data: { deliveries_enqueued: b.enqueued },
  progress: { done: b.enqueued, total: b.total },
});
