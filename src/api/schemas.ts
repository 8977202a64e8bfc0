import { Type, type TSchema } from 'typebox';
import { ID_PREFIX, type IdKind } from '../domain/ids.js';

// Request and response schemas. They validate at the edge, shape the serialized responses and generate
// the OpenAPI document, so each field of the contract is written down exactly once.

export const Timestamp = Type.String({ format: 'date-time' });
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const ErrorEnvelope = Type.Object({
  error: Type.Object({
    code: Type.String(),
    message: Type.String(),
    request_id: Type.Optional(Type.String()),
  }),
});

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 256 }) });

/** A list filter (`?app_id=…`): an empty one is refused rather than read as no filter. */
export const Filter = Type.Optional(Type.String({ minLength: 1, maxLength: 256 }));

/**
 * `limit` and `cursor` of a list of `kind`. A cursor is the last id of the previous page, so one that is
 * not such an id (garbage, another kind's id) is refused rather than answered with a wrong page.
 */
export const pageQuery = (kind: IdKind) => ({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 250, description: 'Items per page (default 50)' })),
  cursor: cursorOf(kind),
});

/** The cursor of a list of `kind`: the next_cursor of the previous page, an id of that kind. */
export const cursorOf = (kind: IdKind) =>
  Type.Optional(
    Type.String({
      pattern: `^${ID_PREFIX[kind]}[0-9a-z]{26}$`,
      description: `next_cursor of the previous page (an ${ID_PREFIX[kind]}… id)`,
    }),
  );

/** A list response: {object: "list", data, has_more, next_cursor}. */
export const ListOf = <T extends TSchema>(item: T) =>
  Type.Object({
    object: Type.Literal('list'),
    data: Type.Array(item),
    has_more: Type.Boolean(),
    next_cursor: Nullable(Type.String()),
  });

export const Message = Type.Object({
  id: Type.String({ description: 'evt_…' }),
  object: Type.Literal('message'),
  event_type: Type.String(),
  app_id: Type.String(),
  created_at: Timestamp,
});

export const EmitResponse = Type.Object({
  id: Type.String(),
  object: Type.Literal('message'),
  event_type: Type.String(),
  app_id: Type.String(),
  created_at: Timestamp,
  delivery_ids: Type.Array(Type.String()),
  idempotent: Type.Boolean(),
});

export const Application = Type.Object({
  id: Type.String({ description: 'app_…' }),
  object: Type.Literal('application'),
  name: Type.String(),
  uid: Nullable(Type.String()),
  created_at: Timestamp,
  updated_at: Timestamp,
});

/** An application as create and rotate-portal-path answer: with its portal_path, shown only then. */
export const ApplicationWithPortalPath = Type.Object({
  ...Application.properties,
  portal_path: Type.String({
    description:
      'Path of this application’s customer portal, relative to the base URL; shown only now (only its hash is stored)',
  }),
});

export const EndpointStatus = Type.Union([Type.Literal('active'), Type.Literal('disabled'), Type.Literal('failing')]);

const endpointFields = {
  id: Type.String({ description: 'ep_…' }),
  object: Type.Literal('endpoint'),
  app_id: Type.String(),
  url: Type.String({ format: 'uri' }),
  status: EndpointStatus,
  event_types: Type.Array(Type.String()),
  description: Type.String(),
  created_at: Timestamp,
  updated_at: Timestamp,
};
export const Endpoint = Type.Object(endpointFields);
export const EndpointWithSecret = Type.Object({
  ...endpointFields,
  signing_secret: Type.String({ description: 'whsec_…, shown once' }),
});

export const Attempt = Type.Object({
  attempt_number: Type.Integer(),
  trigger: Type.Union([Type.Literal('scheduled'), Type.Literal('manual')]),
  status: Type.Union([Type.Literal('success'), Type.Literal('failed')]),
  response_status: Nullable(Type.Integer()),
  response_body: Nullable(Type.String()),
  error: Nullable(Type.String()),
  duration_ms: Type.Integer(),
  created_at: Timestamp,
});

export const DeliveryStatus = Type.Union([
  Type.Literal('pending'),
  Type.Literal('success'),
  Type.Literal('failed'),
  Type.Literal('disabled'),
]);

const deliveryFields = {
  id: Type.String({ description: 'dlv_…' }),
  object: Type.Literal('delivery'),
  message_id: Type.String(),
  endpoint_id: Type.String(),
  status: DeliveryStatus,
  attempt_count: Type.Integer(),
  next_attempt_at: Nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
};
export const Delivery = Type.Object(deliveryFields);
export const DeliveryWithAttempts = Type.Object({ ...deliveryFields, attempts: Type.Array(Attempt) });

export const EventType = Type.Object({
  name: Type.String(),
  object: Type.Literal('event_type'),
  description: Type.String(),
  version: Type.Integer(),
  example_json: Type.Object({}, { additionalProperties: true }),
  schema: Nullable(
    Type.Object({}, { additionalProperties: true, description: 'JSON Schema (draft 2020-12) of payloads, or null' }),
  ),
  created_at: Timestamp,
  updated_at: Timestamp,
});

const apiKeyFields = {
  id: Type.String({ description: 'key_…' }),
  object: Type.Literal('api_key'),
  name: Type.String(),
  prefix: Type.Union([Type.Literal('sk_test_'), Type.Literal('sk_live_')]),
  livemode: Type.Boolean(),
  created_at: Timestamp,
  revoked_at: Nullable(Timestamp),
};
export const ApiKey = Type.Object(apiKeyFields);
export const ApiKeyWithSecret = Type.Object({
  ...apiKeyFields,
  key: Type.String({ description: 'The key in plaintext, shown once' }),
});

/** Error responses a route documents, each with the envelope. */
export function errors(...statuses: number[]): Record<number, typeof ErrorEnvelope> {
  return Object.fromEntries(statuses.map((s) => [s, ErrorEnvelope]));
}
