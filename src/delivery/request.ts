import { signPayload } from '../domain/secrets.js';
import { outboundBody } from '../domain/envelope.js';
import type { AttemptInput } from '../store/queue/index.js';
import type { SigningSecrets } from '../domain/secrets.js';
import type { SendRequest } from './sender.js';
import type { ReceiverTls } from '../domain/pem.js';
import type { OAuth2Client } from '../domain/endpoint-auth.js';
import { headerBlock, REDACTED } from '../domain/headers.js';
import type { TransformedRequest } from '../domain/transformations.js';
import { CONTENT_TYPE, keptByName, USER_AGENT } from '../domain/request-headers.js';

/**
 * The Standard Webhooks request for one attempt: `webhook-id` is the message id (the same on every
 * attempt, retry and replay), `webhook-timestamp` this attempt's time, and one `v1,` signature per valid
 * secret (the current one first, then those rotated out whose grace has not ended), and the endpoint's own
 * headers, client certificate and OAuth2 client, and the attempt's W3C trace context (src/tracing/). The
 * signed body is the body sent: the envelope, or what the endpoint's transformation made (`transformed`:
 * its method, URL, headers and body). An endpoint of the Svix-compatible surface (`svixHeaders`)
 * gets the same three values under the svix-* names too, so receivers written against Svix verify them
 * unchanged.
 */
export function signedRequest(
  input: Pick<AttemptInput, 'delivery'>,
  endpoint: {
    url: string;
    publicOnly: boolean;
    secrets: SigningSecrets;
    headers: Record<string, string>;
    svixHeaders?: boolean | undefined;
    id?: string | undefined;
    tls?: ReceiverTls | null | undefined;
    auth?: OAuth2Client | null | undefined;
  },
  payloadJson: string,
  nowMs: number,
  trace: { traceparent: string; tracestate: string | null },
  transformed: Pick<TransformedRequest, 'method' | 'url' | 'headers' | 'body'> | null = null,
): SendRequest {
  const body = transformed?.body ?? outboundBody(input.delivery.eventType, input.delivery.createdAt, payloadJson);
  const timestamp = Math.floor(nowMs / 1000);
  const msgId = input.delivery.messageId;
  const signatures = [endpoint.secrets.current, ...endpoint.secrets.previous]
    .map((secret) => signPayload(secret, msgId, timestamp, body))
    .join(' ');
  return {
    url: transformed?.url ?? endpoint.url,
    method: transformed?.method ?? 'POST',
    body,
    publicOnly: endpoint.publicOnly,
    tls: endpoint.tls ?? null,
    // Tokens are kept per endpoint: one without an id (a sample request) shares none.
    auth: endpoint.auth ? { endpointId: endpoint.id ?? endpoint.url, client: endpoint.auth } : null,
    // A transformation's first, then the endpoint's own, then Herald's: the names of the last are refused
    // in the first two, so the signature is always Herald's.
    headers: {
      ...transformed?.headers,
      ...endpoint.headers,
      'content-type': CONTENT_TYPE,
      'user-agent': USER_AGENT,
      'webhook-id': msgId,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatures,
      traceparent: trace.traceparent,
      ...(trace.tracestate === null ? {} : { tracestate: trace.tracestate }),
      ...(endpoint.svixHeaders
        ? { 'svix-id': msgId, 'svix-timestamp': String(timestamp), 'svix-signature': signatures }
        : {}),
    },
  };
}

/**
 * The headers a request of message `messageId` is sent with, as its attempt keeps them (headerBlock):
 * sensitive values (those that look like credentials and those the endpoint marks, `marked`) redacted, the
 * bearer token an OAuth2 endpoint's request carries (added as it is sent) named, redacted, and the lines
 * that derive from the message and the release kept by name (src/domain/request-headers.ts).
 */
export function shownRequestHeaders(request: SendRequest, messageId: string, marked?: ReadonlySet<string>): string {
  const pairs = Object.entries(request.headers);
  if (request.auth) pairs.push(['authorization', REDACTED]);
  return headerBlock(pairs, true, marked, keptByName(messageId));
}
