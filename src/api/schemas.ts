import { type TLiteral, Type, type TSchema, type TUnion } from 'typebox';
import { ID_PREFIX, type IdKind } from '../domain/ids.js';
import {
  ATTEMPT_STATUSES,
  ATTEMPT_TRIGGERS,
  BACKGROUND_TASK_KINDS,
  BACKGROUND_TASK_STATUSES,
  DELIVERY_STATUSES,
} from '../domain/states.js';

// Request and response schemas. They validate at the edge, shape the serialized responses and generate
// the OpenAPI document, so each field of the contract is written down exactly once.

export const Timestamp = Type.String({ format: 'date-time' });
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
/** A literal schema per name of a tuple of names. */
type LiteralsOf<T extends readonly string[]> = { -readonly [K in keyof T]: TLiteral<T[K]> };
/**
 * One of the named states of a list in src/domain/states.ts. The map keeps the list's order, so its type
 * is the tuple the cast names (TypeBox infers a union's static type from a tuple, not from an array).
 */
const literals = <const T extends readonly string[]>(names: T): TUnion<LiteralsOf<T>> =>
  Type.Union(names.map((name) => Type.Literal(name)) as LiteralsOf<T>) as TUnion<LiteralsOf<T>>;

/**
 * `schema` as the answer of one status, with what that status means there (the OpenAPI document's
 * response description; the schema's own description is left as it is).
 */
export const meaning = <T extends TSchema>(schema: T, text: string): T =>
  ({ ...schema, 'x-response-description': text }) as T;

/** `schema` with one example (what the OpenAPI document and the /docs page show for it). */
export const withExample = <T extends TSchema>(schema: T, example: unknown): T =>
  ({ ...schema, examples: [example] }) as T;

/** What a success status means where a route does not say (the OpenAPI document's response description). */
export const SUCCESS_MEANINGS: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted: the work is queued and done in the background',
  204: 'Done; no body',
};

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

/** A list's window of creation times: `since` included, `until` excluded. */
export const CreatedWithin = {
  since: Type.Optional(Type.String({ format: 'date-time', description: 'Created at or after this time' })),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'Created before this time' })),
};

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

/** A list response: {object: "list", data, has_more, next_cursor}; its example lists the item's example. */
export const ListOf = <T extends TSchema>(item: T) => {
  const examples = (item as { examples?: unknown[] }).examples;
  return Type.Object(
    {
      object: Type.Literal('list'),
      data: Type.Array(item),
      has_more: Type.Boolean(),
      next_cursor: Nullable(Type.String()),
    },
    Array.isArray(examples)
      ? { examples: [{ object: 'list', data: [examples[0]], has_more: false, next_cursor: null }] }
      : {},
  );
};

/** Ids as the examples of the OpenAPI document show them. */
const EXAMPLE_ID = {
  message: 'evt_01jd5x3k8m2n4p6q8r0s2t4v6w',
  app: 'app_01jd5x3k8m2n4p6q8r0s2t4v6w',
  endpoint: 'ep_01jd5x3k8m2n4p6q8r0s2t4v6w',
  delivery: 'dlv_01jd5x3k8m2n4p6q8r0s2t4v6w',
  key: 'key_01jd5x3k8m2n4p6q8r0s2t4v6w',
};
const EXAMPLE_TIME = '2026-01-01T00:00:00.000Z';

const messageExample = {
  id: EXAMPLE_ID.message,
  object: 'message',
  event_type: 'invoice.paid',
  app_id: EXAMPLE_ID.app,
  channels: [],
  tags: ['region-eu'],
  trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
  created_at: EXAMPLE_TIME,
};
/** A message's W3C trace id (src/domain/trace-context.ts): every attempt's traceparent carries it. */
const TraceId = Type.String({
  pattern: '^[0-9a-f]{32}$',
  description:
    "The W3C trace id every attempt's `traceparent` carries: the emit's own trace, or one derived from the message id",
});

export const Message = Type.Object(
  {
    id: Type.String({ description: 'evt_…' }),
    object: Type.Literal('message'),
    event_type: Type.String(),
    app_id: Type.String(),
    channels: Type.Array(Type.String(), { description: 'Routing channels (empty: none)' }),
    tags: Type.Array(Type.String(), { description: 'Labels, for lists (tag=)' }),
    trace_id: TraceId,
    created_at: Timestamp,
  },
  { examples: [messageExample] },
);

/** A message's stored payload, read on demand (message reads stay metadata-only). */
export const MessagePayload = Type.Object(
  {
    id: Type.String({ description: 'evt_…' }),
    object: Type.Literal('message_payload'),
    app_id: Type.String(),
    event_type: Type.String(),
    payload: Type.Object(
      {},
      { additionalProperties: true, description: 'The payload as emitted: what receivers get as `data`' },
    ),
    created_at: Timestamp,
  },
  {
    examples: [
      {
        id: EXAMPLE_ID.message,
        object: 'message_payload',
        app_id: EXAMPLE_ID.app,
        event_type: 'invoice.paid',
        payload: { invoice_id: 'inv_1001', amount: 4200, currency: 'usd' },
        created_at: EXAMPLE_TIME,
      },
    ],
  },
);

export const EmitResponse = Type.Object(
  {
    id: Type.String(),
    object: Type.Literal('message'),
    event_type: Type.String(),
    app_id: Type.String(),
    channels: Type.Array(Type.String()),
    tags: Type.Array(Type.String()),
    trace_id: TraceId,
    created_at: Timestamp,
    delivery_ids: Type.Array(Type.String()),
    idempotent: Type.Boolean(),
  },
  { examples: [{ ...messageExample, delivery_ids: [EXAMPLE_ID.delivery], idempotent: false }] },
);

const applicationExample = {
  id: EXAMPLE_ID.app,
  object: 'application',
  name: 'Acme Inc.',
  uid: 'acme',
  created_at: EXAMPLE_TIME,
  updated_at: EXAMPLE_TIME,
};
export const Application = Type.Object(
  {
    id: Type.String({ description: 'app_…' }),
    object: Type.Literal('application'),
    name: Type.String(),
    uid: Nullable(Type.String()),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { examples: [applicationExample] },
);

/** An application as create and rotate-portal-path answer: with its portal_path, shown only then. */
export const ApplicationWithPortalPath = Type.Object(
  {
    ...Application.properties,
    portal_path: Type.String({
      description:
        'Path of this application’s customer portal, relative to the base URL; shown only now (only its hash is stored)',
    }),
  },
  { examples: [{ ...applicationExample, portal_path: '/portal/pt_3q8Zr0sT2v4W6x8Y0a2C4e6G8i0K2m4O' }] },
);

export const RateLimit = Type.Integer({
  minimum: 1,
  maximum: 10_000,
  description:
    'Most requests a second Herald sends to the endpoint, across every worker; attempts over it wait (no failure, no attempt used). null: no limit',
});

export const Ordering = Type.Union([Type.Literal('unordered'), Type.Literal('fifo')], {
  description:
    'fifo: deliveries go one at a time in creation order; a delivery waits until every earlier one has settled (manual retries and recovery do not wait)',
});

export const SignatureType = Type.Union([Type.Literal('hmac'), Type.Literal('ed25519')], {
  description:
    'hmac (default): v1 signatures with a whsec_ secret; ed25519: v1a signatures, verified with public_key. Fixed at creation',
});

/** A channel or tag name (Svix's rule, so both surfaces take the same ones). */
const ChannelName = Type.String({ minLength: 1, maxLength: 128, pattern: '^[a-zA-Z0-9\\-_.:]+$' });
/** An endpoint's channels: it receives only messages sharing one (empty: every message). */
export const EndpointChannels = Type.Array(ChannelName, { maxItems: 10, uniqueItems: true });
/** A message's channels (routing) and tags (labels). */
export const MessageChannels = Type.Array(ChannelName, { minItems: 1, maxItems: 5, uniqueItems: true });
export const MessageTags = Type.Array(ChannelName, { maxItems: 5, uniqueItems: true });
/** An endpoint's content filter: a MongoDB-style query over the outbound body (docs/api.md, "Content filters"). */
export const ContentFilter = Type.Object(
  {},
  {
    additionalProperties: true,
    description:
      'MongoDB-style query over {type, timestamp, data}: $eq $ne $gt $gte $lt $lte $in $nin $exists $and $or $nor $not $size $all $elemMatch $regex (linear-time patterns); at most 4 KB and 8 levels',
  },
);

/** An endpoint's uid: its stable id in the application; may stand in for the id, so never looks like one. */
export const EndpointUid = Type.String({
  minLength: 1,
  maxLength: 256,
  pattern: '^(?!ep_)[a-zA-Z0-9._:-]+$',
  description: 'Your stable id for this endpoint in its application (not starting with ep_)',
});

/** A PEM text of an endpoint's TLS settings. */
const Pem = (description: string) => Type.String({ minLength: 1, maxLength: 65_536, description });

/** `tls` as create and update take it (src/domain/pem.ts checks the PEM). */
export const EndpointTlsInput = Type.Object(
  {
    client_cert: Type.Optional(
      Nullable(Pem('Client certificate (PEM; its chain may follow), sent to receivers that demand mutual TLS')),
    ),
    client_key: Type.Optional(
      Nullable(Pem('Its private key (PEM, unencrypted; sealed at rest). "<redacted>" keeps the stored one')),
    ),
    ca: Type.Optional(
      Nullable(Pem("CA certificates (PEM) that replace the default roots for the receiver's certificate")),
    ),
  },
  {
    additionalProperties: false,
    description:
      'TLS settings for https receivers: client_cert and client_key together (mutual TLS), ca for a private CA. An update replaces the whole object; null removes it',
  },
);

/** `auth` as create and update take it (src/domain/endpoint-auth.ts checks the token URL). */
export const EndpointAuthInput = Type.Object(
  {
    type: Type.Literal('oauth2_client_credentials'),
    token_url: Type.String({
      minLength: 1,
      maxLength: 2048,
      description: "The token server's URL; the endpoint URL's rules apply (https in Live mode, public addresses)",
    }),
    client_id: Type.String({ minLength: 1, maxLength: 1024 }),
    client_secret: Type.String({
      minLength: 1,
      maxLength: 4096,
      description: 'Sealed at rest, read back as "<redacted>"; "<redacted>" in an update keeps the stored one',
    }),
    scope: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 1024 }))),
    audience: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 1024 }))),
    client_auth: Type.Optional(
      Type.Union([Type.Literal('basic'), Type.Literal('post')], {
        description: 'basic (default): client_secret_basic; post: the id and secret in the form body',
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      'OAuth2 client credentials: every request carries a bearer token from token_url (cached until shortly before it expires; a 401 fetches a new one once). null removes it',
  },
);

export const EndpointStatus = Type.Union([Type.Literal('active'), Type.Literal('disabled'), Type.Literal('failing')]);

const endpointFields = {
  id: Type.String({ description: 'ep_…' }),
  object: Type.Literal('endpoint'),
  app_id: Type.String(),
  uid: Nullable(Type.String({ description: 'Your stable id for the endpoint, unique in its application' })),
  url: Type.String({ format: 'uri' }),
  status: EndpointStatus,
  event_types: Type.Array(Type.String()),
  channels: Type.Array(Type.String(), {
    description: 'Receives only messages sharing one of these channels; empty: every message',
  }),
  filter: Nullable(ContentFilter),
  description: Type.String(),
  headers: Type.Record(Type.String(), Type.String(), {
    description: 'Headers sent with every request; sensitive values (credentials) show as "<redacted>"',
  }),
  rate_limit: Nullable(RateLimit),
  ordering: Ordering,
  signature_type: SignatureType,
  public_key: Nullable(
    Type.String({ description: 'ed25519 endpoints: whpk_ + base64 of the raw 32-byte public key; null for hmac' }),
  ),
  tls: Nullable(
    Type.Object(
      {
        client_cert: Nullable(Type.String()),
        client_key: Nullable(Type.String({ description: '"<redacted>" when set' })),
        ca: Nullable(Type.String()),
        client_cert_not_after: Nullable(
          Type.String({ format: 'date-time', description: "The client certificate's expiry" }),
        ),
      },
      { description: 'TLS settings (mutual TLS, private CA); null: none' },
    ),
  ),
  auth: Nullable(
    Type.Object(
      {
        type: Type.Literal('oauth2_client_credentials'),
        token_url: Type.String(),
        client_id: Type.String(),
        client_secret: Type.String({ description: 'Always "<redacted>"' }),
        scope: Nullable(Type.String()),
        audience: Nullable(Type.String()),
        client_auth: Type.Union([Type.Literal('basic'), Type.Literal('post')]),
      },
      { description: 'OAuth2 client credentials the requests carry a bearer token from; null: none' },
    ),
  ),
  created_at: Timestamp,
  updated_at: Timestamp,
};
const endpointExample = {
  id: EXAMPLE_ID.endpoint,
  object: 'endpoint',
  app_id: EXAMPLE_ID.app,
  uid: 'billing',
  url: 'https://acme.example/webhooks',
  status: 'active',
  event_types: ['invoice.paid'],
  channels: [],
  filter: { 'data.amount': { $gte: 1000 } },
  description: 'Billing receiver',
  headers: { Authorization: '<redacted>', 'X-Tenant': 'acme' },
  rate_limit: 50,
  ordering: 'unordered',
  signature_type: 'hmac',
  public_key: null,
  tls: null,
  auth: {
    type: 'oauth2_client_credentials',
    token_url: 'https://auth.acme.example/oauth/token',
    client_id: 'herald',
    client_secret: '<redacted>',
    scope: 'webhooks:write',
    audience: null,
    client_auth: 'basic',
  },
  created_at: EXAMPLE_TIME,
  updated_at: EXAMPLE_TIME,
};
export const Endpoint = Type.Object(endpointFields, { examples: [endpointExample] });

/** `headers` as create and update take them: names and values are checked by headersProblem. */
export const EndpointHeaders = Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.String(), {
  maxProperties: 20,
  description:
    'Headers sent with every request to the endpoint (at most 20; reserved names refused). An update replaces the whole set; a sensitive value sent back as "<redacted>" keeps the stored one',
});

export const EndpointWithSecret = Type.Object(
  {
    ...endpointFields,
    signing_secret: Type.Optional(Type.String({ description: 'hmac endpoints: whsec_…, shown once' })),
  },
  { examples: [{ ...endpointExample, signing_secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }] },
);

/**
 * An operational endpoint: an endpoint object whose `app_id` is the environment's hidden application of
 * operational endpoints, and whose event types are Herald's operational events.
 */
const operationalEndpointExample = {
  ...endpointExample,
  url: 'https://ops.acme.example/herald',
  event_types: ['endpoint.disabled', 'message.attempt.exhausted'],
  description: 'Pager',
  headers: {},
  rate_limit: null,
  auth: null,
};
export const OperationalEndpoint = Type.Object(endpointFields, { examples: [operationalEndpointExample] });
export const OperationalEndpointWithSecret = Type.Object(
  {
    ...endpointFields,
    signing_secret: Type.Optional(Type.String({ description: 'whsec_…, shown once' })),
  },
  { examples: [{ ...operationalEndpointExample, signing_secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }] },
);

export const BackgroundTask = Type.Object(
  {
    object: Type.Literal('background_task'),
    id: Type.String({ description: 'task_…' }),
    kind: literals(BACKGROUND_TASK_KINDS),
    status: literals(BACKGROUND_TASK_STATUSES),
    created_at: Timestamp,
    updated_at: Timestamp,
    data: Type.Object({ deliveries_enqueued: Type.Integer({ description: 'Deliveries given a new attempt so far' }) }),
  },
  {
    examples: [
      {
        object: 'background_task',
        id: 'task_01jd5x3k8m2n4p6q8r0s2t4v6w',
        kind: 'endpoint.recover',
        status: 'running',
        created_at: EXAMPLE_TIME,
        updated_at: EXAMPLE_TIME,
        data: { deliveries_enqueued: 500 },
      },
    ],
  },
);

const statsCounts = {
  success: Type.Integer({ minimum: 0, description: 'Attempts answered 2xx' }),
  failure: Type.Integer({
    minimum: 0,
    description: 'Attempts that failed (non-2xx answer, timeout, connection error)',
  }),
};
export const StatsQuery = Type.Object({
  since: Type.Optional(
    Type.String({
      format: 'date-time',
      description: 'Start of the window (default: the start of the hour 23 hours before the one until falls in)',
    }),
  ),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'End of the window, excluded (default: now)' })),
});
export const EndpointStats = Type.Object(
  {
    object: Type.Literal('endpoint_stats'),
    endpoint_id: Type.String(),
    since: Timestamp,
    until: Timestamp,
    buckets: Type.Array(
      Type.Object({
        start: Timestamp,
        ...statsCounts,
        p50_ms: Nullable(
          Type.Integer({
            minimum: 0,
            description:
              "Median duration of the hour's attempts in ms (nearest rank: a duration one of them took, failures included); null: no attempts",
          }),
        ),
        p95_ms: Nullable(
          Type.Integer({
            minimum: 0,
            description:
              "95th percentile of the hour's attempt durations in ms (nearest rank, failures included); null: no attempts",
          }),
        ),
      }),
      {
        description:
          'Every UTC hour the window touches, oldest first; counts and durations are of attempts inside [since, until)',
      },
    ),
    totals: Type.Object(statsCounts),
  },
  {
    examples: [
      {
        object: 'endpoint_stats',
        endpoint_id: EXAMPLE_ID.endpoint,
        since: '2026-01-01T00:00:00.000Z',
        until: '2026-01-01T01:30:00.000Z',
        buckets: [
          { start: '2026-01-01T00:00:00.000Z', success: 118, failure: 2, p50_ms: 84, p95_ms: 412 },
          { start: '2026-01-01T01:00:00.000Z', success: 57, failure: 0, p50_ms: 79, p95_ms: 198 },
        ],
        totals: { success: 175, failure: 2 },
      },
    ],
  },
);

const eventTypeCounts = Type.Object({
  event_type: Type.String({ description: 'An event type name' }),
  ...statsCounts,
});
export const ApplicationStats = Type.Object(
  {
    object: Type.Literal('application_stats'),
    app_id: Type.String(),
    since: Timestamp,
    until: Timestamp,
    event_types: Type.Array(eventTypeCounts, {
      maxItems: 20,
      description:
        "The 20 event types (at most) with the most attempts in the window, most first (ties by name), with the window's counts",
    }),
    other: Type.Object(statsCounts, { description: 'The attempts of every other event type, summed' }),
    buckets: Type.Array(
      Type.Object({
        start: Timestamp,
        ...statsCounts,
        event_types: Type.Array(eventTypeCounts, {
          maxItems: 20,
          description: "The named event types with attempts in this hour, in the order of the window's event_types",
        }),
        other: Type.Object(statsCounts),
      }),
      {
        description:
          'Every UTC hour the window touches, oldest first; counts are of attempts inside [since, until), all event types together and by type',
      },
    ),
    totals: Type.Object(statsCounts),
  },
  {
    examples: [
      {
        object: 'application_stats',
        app_id: EXAMPLE_ID.app,
        since: '2026-01-01T00:00:00.000Z',
        until: '2026-01-01T01:30:00.000Z',
        event_types: [
          { event_type: 'invoice.paid', success: 150, failure: 2 },
          { event_type: 'invoice.refunded', success: 20, failure: 0 },
        ],
        other: { success: 5, failure: 0 },
        buckets: [
          {
            start: '2026-01-01T00:00:00.000Z',
            success: 118,
            failure: 2,
            event_types: [
              { event_type: 'invoice.paid', success: 100, failure: 2 },
              { event_type: 'invoice.refunded', success: 15, failure: 0 },
            ],
            other: { success: 3, failure: 0 },
          },
          {
            start: '2026-01-01T01:00:00.000Z',
            success: 57,
            failure: 0,
            event_types: [
              { event_type: 'invoice.paid', success: 50, failure: 0 },
              { event_type: 'invoice.refunded', success: 5, failure: 0 },
            ],
            other: { success: 2, failure: 0 },
          },
        ],
        totals: { success: 175, failure: 2 },
      },
    ],
  },
);

export const Attempt = Type.Object({
  attempt_number: Type.Integer(),
  trigger: literals(ATTEMPT_TRIGGERS),
  status: literals(ATTEMPT_STATUSES),
  response_status: Nullable(Type.Integer()),
  request_headers: Nullable(
    Type.Record(Type.String(), Type.String(), {
      description:
        "The headers Herald sent, by lowercase name; credentials (the endpoint's sensitive headers, an OAuth2 bearer token) show as <redacted>. Null on attempts made before headers were kept",
    }),
  ),
  response_headers: Nullable(
    Type.Record(Type.String(), Type.String(), {
      description:
        "The receiver's answer's headers as received, by lowercase name (a repeated name's values joined by \", \"); null when no answer came",
    }),
  ),
  response_body: Nullable(
    Type.String({ description: "The receiver's answer's body, up to HERALD_RESPONSE_BODY_LIMIT bytes" }),
  ),
  error: Nullable(Type.String()),
  duration_ms: Type.Integer(),
  created_at: Timestamp,
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
        trace_id: messageExample.trace_id,
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

export const EventType = Type.Object(
  {
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
  },
  {
    examples: [
      {
        name: 'invoice.paid',
        object: 'event_type',
        description: 'An invoice was paid in full.',
        version: 2,
        example_json: { invoice_id: 'inv_1001', amount: 4200, currency: 'usd' },
        schema: {
          type: 'object',
          properties: { invoice_id: { type: 'string' }, amount: { type: 'integer' }, currency: { type: 'string' } },
          required: ['invoice_id', 'amount'],
        },
        created_at: EXAMPLE_TIME,
        updated_at: EXAMPLE_TIME,
      },
    ],
  },
);

const apiKeyFields = {
  id: Type.String({ description: 'key_…' }),
  object: Type.Literal('api_key'),
  name: Type.String(),
  prefix: Type.Union([Type.Literal('sk_test_'), Type.Literal('sk_live_')]),
  livemode: Type.Boolean(),
  created_at: Timestamp,
  revoked_at: Nullable(Timestamp),
};
const apiKeyExample = {
  id: EXAMPLE_ID.key,
  object: 'api_key',
  name: 'CI key',
  prefix: 'sk_test_',
  livemode: false,
  created_at: EXAMPLE_TIME,
  revoked_at: null,
};
export const ApiKey = Type.Object(apiKeyFields, { examples: [apiKeyExample] });
export const ApiKeyWithSecret = Type.Object(
  {
    ...apiKeyFields,
    key: Type.String({ description: 'The key in plaintext, shown once' }),
  },
  { examples: [{ ...apiKeyExample, key: 'sk_test_4eC39HqLyjWDarjtT1zdp7dcQm2nR8xZ' }] },
);

/** What each error status means, with an example answer, as the OpenAPI document shows them. */
const ERROR_STATUSES: Record<number, { description: string; code: string; message: string }> = {
  400: {
    description: 'The request is not valid; the message names the field and the rule',
    code: 'invalid_request',
    message: "body must have required property 'app_id'",
  },
  401: {
    description: 'The API key is missing, malformed, unknown or revoked',
    code: 'unauthorized',
    message: 'Invalid or revoked API key',
  },
  403: {
    description: 'The key may not do this (send-test with a Live key)',
    code: 'test_mode_only',
    message: 'send-test is only available with a Test key (sk_test_)',
  },
  404: {
    description: "Not found in the key's organization and environment",
    code: 'not_found',
    message: `application ${EXAMPLE_ID.app} not found`,
  },
  409: {
    description: 'Conflicts with what exists (a duplicate uid or name, a limit reached)',
    code: 'conflict',
    message: 'an application with uid "acme" already exists',
  },
  410: {
    description:
      'The message exists but its payload is gone: expunged, past its own retention, or purged after HERALD_RETENTION',
    code: 'payload_gone',
    message: `the payload of message ${EXAMPLE_ID.message} is no longer stored`,
  },
  413: {
    description: 'The body is larger than HERALD_MAX_PAYLOAD_BYTES',
    code: 'payload_too_large',
    message: 'Request body is larger than the maximum allowed size',
  },
  415: {
    description: 'The body is not JSON in UTF-8 (another Content-Type, charset or Content-Encoding)',
    code: 'invalid_request',
    message: 'Content-Type must be application/json',
  },
  429: {
    description: "Over the organization's rate limit; retry after Retry-After seconds",
    code: 'rate_limited',
    message: 'Too many requests',
  },
  503: {
    description:
      'The database is unavailable (service_unavailable) or its disk is full (storage_full); nothing was saved, retry after Retry-After seconds',
    code: 'service_unavailable',
    message: 'The database is unavailable',
  },
};

/** Error responses a route documents: each the envelope, with what the status means and an example. */
export function errors(...statuses: number[]): Record<number, typeof ErrorEnvelope> {
  return Object.fromEntries(
    statuses.map((status) => {
      const meaning = ERROR_STATUSES[status];
      if (!meaning) return [status, ErrorEnvelope];
      const example = {
        error: { code: meaning.code, message: meaning.message, request_id: 'req_01jd5x3k8m2n4p6q8r0s2t4v6w' },
      };
      return [status, Type.Object(ErrorEnvelope.properties, { description: meaning.description, examples: [example] })];
    }),
  );
}
