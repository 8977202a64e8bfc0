import { Type } from 'typebox';
import { ATTEMPT_STATUSES, ATTEMPT_TRIGGERS, DELIVERY_STATUSES } from '../../domain/states.js';
import { EXAMPLE_ID, EXAMPLE_TIME, EXAMPLE_TRACE_ID, literals, Nullable, Timestamp } from './common.js';
import { TraceId } from './messages.js';

// A delivery (a message to one endpoint) and its attempts.

export const Attempt = Type.Object({
  attempt_number: Type.Integer(),
  trigger: literals(ATTEMPT_TRIGGERS),
  status: literals(ATTEMPT_STATUSES),
  response_status: Nullable(Type.Integer()),
  request_headers: Nullable(
    Type.Record(Type.String(), Type.String(), {
      description:
        "The headers Herald sent, by lowercase name; credentials (the endpoint's sensitive headers, an OAuth2 bearer token) show as <redacted>, a value past 1,024 characters is cut and ends in …. Null on attempts made before headers were kept",
    }),
  ),
  response_headers: Nullable(
    Type.Record(Type.String(), Type.String(), {
      description:
        "The receiver's answer's headers as received, by lowercase name (a repeated name's values joined by \", \"); credential-looking ones (set-cookie, authorization, names holding token, secret, key, session…) show as <redacted>, a value past 1,024 characters is cut and ends in …; null when no answer came",
    }),
  ),
  response_body: Nullable(
    Type.String({ description: "The receiver's answer's body, up to HERALD_RESPONSE_BODY_LIMIT bytes" }),
  ),
  error: Nullable(Type.String()),
  duration_ms: Type.Integer(),
  created_at: Timestamp,
  request: Type.Optional(
    Nullable(
      Type.Object(
        { method: Type.String(), url: Type.String(), body: Type.String({ description: 'The body as sent' }) },
        {
          description:
            "The request the endpoint's transformation made (docs/transformations.md): its method, URL and body as sent. Null: the plain request, a POST of the message's envelope to the endpoint's URL",
        },
      ),
    ),
  ),
});

export const DeliveryStatus = literals(DELIVERY_STATUSES);

const deliveryFields = {
  id: Type.String({ description: 'dlv_…' }),
  object: Type.Literal('delivery'),
  message_id: Type.String(),
  endpoint_id: Type.String(),
  event_type: Nullable(
    Type.String({ description: "The message's event type; null once the message is no longer stored" }),
  ),
  status: DeliveryStatus,
  attempt_count: Type.Integer(),
  next_attempt_at: Nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
};
const deliveryExample = {
  id: EXAMPLE_ID.delivery,
  object: 'delivery',
  message_id: EXAMPLE_ID.message,
  endpoint_id: EXAMPLE_ID.endpoint,
  event_type: 'invoice.paid',
  status: 'success',
  attempt_count: 1,
  next_attempt_at: null,
  created_at: EXAMPLE_TIME,
  updated_at: EXAMPLE_TIME,
};
export const Delivery = Type.Object(deliveryFields, { examples: [deliveryExample] });
export const DeliveryWithAttempts = Type.Object(
  {
    ...deliveryFields,
    trace_id: Type.String({
      ...TraceId,
      description: "The message's W3C trace id, which every attempt's traceparent carries",
    }),
    attempts: Type.Array(Attempt),
  },
  {
    examples: [
      {
        ...deliveryExample,
        trace_id: EXAMPLE_TRACE_ID,
        attempts: [
          {
            attempt_number: 1,
            trigger: 'scheduled',
            status: 'success',
            response_status: 200,
            request_headers: {
              'x-customer-key': '<redacted>',
              'content-type': 'application/json',
              'user-agent': 'Herald-Webhooks/0.1 (+https://github.com/herald-webhooks/herald)',
              'webhook-id': EXAMPLE_ID.message,
              'webhook-timestamp': '1795000000',
              'webhook-signature': 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
              traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
            },
            response_headers: { 'content-type': 'text/plain', 'content-length': '2' },
            response_body: 'ok',
            error: null,
            duration_ms: 42,
            created_at: EXAMPLE_TIME,
          },
        ],
      },
    ],
  },
);
