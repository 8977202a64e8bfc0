import { TRANSFORMATION_CODE_LIMIT } from '../../domain/transformations.js';
import { Type } from 'typebox';
import { described, EXAMPLE_ID, EXAMPLE_TIME, Nullable, Timestamp } from './common.js';
import { ChannelName, EndpointUrl, EventTypeNames } from './fields.js';

// An endpoint as reads show it, the fields create and update take, and the answers of its own actions
// (filter-test, rotate-secret).

/** The endpoint URL as the native surface documents it. */
export const ReceiverUrl = described(
  EndpointUrl,
  "Receiver URL; https in Live mode. For a destination, the broker's or bucket's address",
);
/** The event types an endpoint receives, as the native surface documents them. */
export const ReceivedEventTypes = described(
  EventTypeNames,
  'Event types to receive; omitted or empty receives every event type',
);

/** An endpoint's kind: an HTTP receiver, or a broker or bucket its messages are published to. */
export const EndpointTypeField = Type.Union(
  [
    Type.Literal('http'),
    Type.Literal('rabbitmq'),
    Type.Literal('nats'),
    Type.Literal('redis'),
    Type.Literal('mqtt'),
    Type.Literal('kafka'),
    Type.Literal('sqs'),
    Type.Literal('s3'),
  ],
  {
    description:
      "http (the default): a receiver URL. rabbitmq, nats, redis, mqtt, kafka, sqs, s3: `url` is the broker's address and `config` the rest (docs/destinations.md). Fixed at creation",
  },
);

/** A destination's settings as create and update take them: each type's fields are checked by name. */
export const DestinationConfig = Type.Object(
  {},
  {
    additionalProperties: true,
    description:
      'A destination\'s settings by its type (docs/destinations.md); secrets sent back as "<redacted>" keep the stored ones. Not for http',
  },
);

export const RateLimit = Type.Integer({
  minimum: 1,
  maximum: 10_000,
  description:
    'Most requests a second Herald sends to the endpoint, across every worker; attempts over it wait (no failure, no attempt used). null: no limit',
});

export const RetrySchedule = Type.Array(Type.String({ minLength: 1, maxLength: 32 }), {
  minItems: 1,
  maxItems: 20,
  description:
    "The delay before each scheduled attempt, as HERALD_RETRY_SCHEDULE writes them (`0s`, `30s`, `5m`, `2h`, `1d`), each at most 7d: its length is the endpoint's most attempts. Applies to attempts scheduled after a change. null: the service's schedule",
  examples: [['0s', '30s', '5m', '1h']],
});

export const CircuitInput = Type.Union(
  [
    Type.Object({ enabled: Type.Literal(false) }),
    Type.Object({
      enabled: Type.Optional(Type.Literal(true)),
      failure_ratio: Type.Optional(Type.Number({ description: 'Above 0, at most 1 (HERALD_CIRCUIT_FAILURE_RATIO)' })),
      min_attempts: Type.Optional(Type.Integer({ description: '1 or more (HERALD_CIRCUIT_MIN_ATTEMPTS)' })),
      window: Type.Optional(Type.String({ maxLength: 32, description: '1s to 1d (HERALD_CIRCUIT_WINDOW)' })),
      cooldown: Type.Optional(
        Type.String({ maxLength: 32, description: '100ms to HERALD_CIRCUIT_MAX_COOLDOWN (HERALD_CIRCUIT_COOLDOWN)' }),
      ),
    }),
  ],
  {
    description:
      "The endpoint's circuit breaker: when at least min_attempts attempts finished in the last window and at least failure_ratio of them failed, nothing is sent for cooldown (due deliveries wait, using no attempt), then one probe decides. Fields left out follow the service's HERALD_CIRCUIT_* settings; {enabled: false} turns it off; null follows the service",
    examples: [{ failure_ratio: 0.5, min_attempts: 20, window: '60s', cooldown: '30s' }],
  },
);

export const CircuitState = Type.Union([Type.Literal('closed'), Type.Literal('open'), Type.Literal('half_open')], {
  description: 'closed: sending; open: nothing is sent until circuit_open_until; half_open: one probe attempt decides',
});

export const Ordering = Type.Union([Type.Literal('unordered'), Type.Literal('fifo')], {
  description:
    'fifo: deliveries go one at a time in creation order; a delivery waits until every earlier one has settled (manual retries and recovery do not wait)',
});

export const SignatureType = Type.Union([Type.Literal('hmac'), Type.Literal('ed25519')], {
  description:
    'hmac (default): v1 signatures with a whsec_ secret; ed25519: v1a signatures, verified with public_key. Fixed at creation',
});

/** An endpoint's channels: it receives only messages sharing one (empty: every message). */
export const EndpointChannels = Type.Array(ChannelName, { maxItems: 10, uniqueItems: true });
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

/** A transformation as the docs and examples show one. */
const TRANSFORMATION_EXAMPLE =
  'function handler(webhook) {\n  webhook.payload = { text: webhook.eventType + ": " + webhook.payload.data.invoice_id };\n  return webhook;\n}';

/** An endpoint's transformation as create, update and the Svix surface take it (docs/transformations.md). */
export const TransformationInput = Type.Object(
  {
    code: Type.Optional(
      Nullable(
        Type.String({
          maxLength: TRANSFORMATION_CODE_LIMIT,
          description:
            'JavaScript that defines `function handler(webhook)` and returns the webhook changed; null: none',
        }),
      ),
    ),
    enabled: Type.Optional(
      Type.Boolean({ description: 'Whether it runs on every attempt (default: true when code is given)' }),
    ),
  },
  {
    additionalProperties: false,
    description: 'A field left out keeps its value; code is checked (it must compile and define handler)',
    examples: [{ code: TRANSFORMATION_EXAMPLE, enabled: true }],
  },
);

/** An endpoint's transformation as reads show it. */
export const TransformationRead = Type.Object(
  {
    code: Nullable(Type.String()),
    enabled: Type.Boolean(),
    updated_at: Timestamp,
  },
  { description: "The endpoint's transformation (docs/transformations.md); null: none was ever set" },
);

/** What simulate takes: code to try (absent: the endpoint's own), a payload and its event type. */
export const TransformationSimulateBody = Type.Object(
  {
    code: Type.Optional(Type.String({ maxLength: TRANSFORMATION_CODE_LIMIT })),
    payload: Type.Object({}, { additionalProperties: true, description: 'The payload, as `data`' }),
    event_type: Type.Optional(Type.String({ maxLength: 255, description: 'As `type` (default `test.event`)' })),
  },
  { examples: [{ code: TRANSFORMATION_EXAMPLE, event_type: 'invoice.paid', payload: { invoice_id: 'inv_1001' } }] },
);

/** The request a transformation would make. */
export const TransformationSimulated = Type.Object(
  {
    method: Type.String(),
    url: Type.String(),
    headers: Type.Record(Type.String(), Type.String()),
    payload: Type.Unknown({ description: 'The body as it would be sent (any JSON value)' }),
    cancel: Type.Boolean({ description: 'true: no request would be made' }),
  },
  {
    examples: [
      {
        method: 'POST',
        url: 'https://acme.example/webhooks',
        headers: { 'x-event': 'invoice.paid' },
        payload: { text: 'invoice.paid' },
        cancel: false,
      },
    ],
  },
);

/** An endpoint's fields as reads show them (operational endpoints show the same). */
export const endpointFields = {
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
    description: 'Headers sent with every request; sensitive values (those in sensitive_headers) show as "<redacted>"',
  }),
  sensitive_headers: Type.Array(Type.String(), {
    description:
      'The names of `headers` shown as "<redacted>": those marked sensitive and those that look like credentials (authorization, cookie, names holding token, secret, password, key, session, signature…)',
  }),
  rate_limit: Nullable(RateLimit),
  retry_schedule: Nullable(RetrySchedule),
  circuit: Nullable(CircuitInput),
  circuit_state: CircuitState,
  circuit_open_until: Nullable(Type.String({ format: 'date-time', description: 'While open: when the probe may go' })),
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
  type: EndpointTypeField,
  config: Nullable(
    Type.Object(
      {},
      {
        additionalProperties: true,
        description:
          'A destination\'s settings (docs/destinations.md), every field shown, secrets as "<redacted>"; null for http',
      },
    ),
  ),
  transformation: Nullable(TransformationRead),
  created_at: Timestamp,
  updated_at: Timestamp,
};
export const endpointExample = {
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
  sensitive_headers: ['Authorization'],
  rate_limit: 50,
  retry_schedule: null,
  circuit: null,
  circuit_state: 'closed',
  circuit_open_until: null,
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
  type: 'http',
  config: null,
  transformation: null,
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

/** `sensitive_headers` as create and update take them: names of `headers` to show as "<redacted>". */
export const EndpointSensitiveHeaders = Type.Array(Type.String({ minLength: 1, maxLength: 256 }), {
  maxItems: 20,
  description:
    'Names of `headers` whose values reads show as "<redacted>" (they are still sent as set), beside those that look like credentials. An update that gives it replaces the marks; one that leaves it out keeps the marks of the headers still there. Names not among the headers are ignored',
});

export const EndpointWithSecret = Type.Object(
  {
    ...endpointFields,
    signing_secret: Type.Optional(Type.String({ description: 'hmac endpoints: whsec_…, shown once' })),
  },
  { examples: [{ ...endpointExample, signing_secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }] },
);

/** What filter-test takes (native and portal): a payload, its event type, and a draft filter to try. */
export const FilterTestBody = Type.Object(
  {
    payload: Type.Object({}, { additionalProperties: true, description: 'The payload, as `data`' }),
    event_type: Type.Optional(Type.String({ maxLength: 255, description: 'As `type` (default empty)' })),
    // A draft filter to try instead of the endpoint's own (null: none); nothing is saved.
    filter: Type.Optional(Nullable(ContentFilter)),
  },
  {
    examples: [
      {
        event_type: 'invoice.paid',
        payload: { invoice_id: 'inv_1001', amount: 4200 },
        filter: { 'data.amount': { $gte: 1000 } },
      },
    ],
  },
);

export const FilterTestAnswer = Type.Object(
  { matches: Type.Boolean({ description: 'true also when there is no filter' }) },
  { examples: [{ matches: true }] },
);

/** The answer of a secret rotation: the new secret (or public key) and until when the previous one signs. */
export const RotatedSecret = Type.Object(
  {
    id: Type.String(),
    signing_secret: Type.Optional(Type.String({ description: 'hmac endpoints: the new whsec_ secret' })),
    public_key: Type.Optional(Type.String({ description: 'ed25519 endpoints: the new whpk_ public key' })),
    previous_valid_until: Timestamp,
  },
  {
    examples: [
      {
        id: 'ep_01jd5x3k8m2n4p6q8r0s2t4v6w',
        signing_secret: 'whsec_4M0nR3xY8qTz2WcVb6KjLp9sHd1FgA5e',
        previous_valid_until: '2026-01-02T00:00:00.000Z',
      },
    ],
  },
);
