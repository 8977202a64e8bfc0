import { Type, type TSchema } from 'typebox';
import { iso, madeRequest } from '../serialize.js';
import type { AttemptRead } from '../../store/attempts.js';
import type { DeliveryRead } from '../../store/deliveries.js';
import type { ApplicationRow, BackgroundTaskRow, EndpointRow, EventTypeRow, MessageRow } from '../../store/schema.js';
import type { BackgroundTaskKind, DeliveryStatus } from '../../domain/states.js';

// Herald's rows as Svix's objects (the `svix` SDK's models): camelCase fields, times as ISO 8601, and
// Svix's numbered states. Each object's schema beside its mapping, so the two are read together.

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const Time = Type.String({ format: 'date-time' });
const Metadata = Type.Record(Type.String(), Type.String());

const metadataOf = (text: string) => JSON.parse(text) as Record<string, string>;

/** `{data, iterator, prevIterator, done}`: `iterator` continues after the page's last item. */
export const SvixListOf = <T extends TSchema>(item: T) => {
  const examples = (item as { examples?: unknown[] }).examples;
  return Type.Object(
    {
      data: Type.Array(item),
      iterator: Nullable(Type.String()),
      prevIterator: Nullable(Type.String()),
      done: Type.Boolean(),
    },
    Array.isArray(examples)
      ? { examples: [{ data: [examples[0]], iterator: null, prevIterator: null, done: true }] }
      : {},
  );
};

// Values the examples of the OpenAPI document show.
const EXAMPLE_TIME = '2026-01-01T00:00:00.000Z';
const EXAMPLE_APP = 'app_01jd5x3k8m2n4p6q8r0s2t4v6w';
const EXAMPLE_ENDPOINT = 'ep_01jd5x3k8m2n4p6q8r0s2t4v6w';
const EXAMPLE_MESSAGE = 'evt_01jd5x3k8m2n4p6q8r0s2t4v6w';

export function svixList<Row, Out>(
  page: { items: Row[]; hasMore: boolean; nextCursor: string | null },
  toSvix: (row: Row) => Out,
) {
  return { data: page.items.map(toSvix), iterator: page.nextCursor, prevIterator: null, done: !page.hasMore };
}

export const ApplicationOut = Type.Object(
  {
    id: Type.String(),
    uid: Nullable(Type.String()),
    name: Type.String(),
    rateLimit: Nullable(Type.Integer()),
    metadata: Metadata,
    createdAt: Time,
    updatedAt: Time,
  },
  {
    examples: [
      {
        id: EXAMPLE_APP,
        uid: 'acme',
        name: 'Acme Inc.',
        rateLimit: null,
        metadata: { plan: 'enterprise' },
        createdAt: EXAMPLE_TIME,
        updatedAt: EXAMPLE_TIME,
      },
    ],
  },
);

export const applicationOut = (a: ApplicationRow) => ({
  id: a.id,
  uid: a.uid,
  name: a.name,
  rateLimit: null,
  metadata: metadataOf(a.metadata),
  createdAt: iso(a.created_at),
  updatedAt: iso(a.updated_at),
});

const endpointFields = {
  id: Type.String(),
  uid: Nullable(Type.String()),
  url: Type.String(),
  version: Type.Integer(),
  description: Type.String(),
  disabled: Type.Boolean(),
  filterTypes: Nullable(Type.Array(Type.String())),
  channels: Nullable(Type.Array(Type.String())),
  filter: Nullable(Type.Record(Type.String(), Type.Any())),
  rateLimit: Nullable(Type.Integer()),
  metadata: Metadata,
  createdAt: Time,
  updatedAt: Time,
};
const endpointExample = {
  id: EXAMPLE_ENDPOINT,
  uid: 'billing',
  url: 'https://acme.example/webhooks',
  version: 1,
  description: 'Billing receiver',
  disabled: false,
  filterTypes: ['invoice.paid'],
  channels: null,
  filter: null,
  rateLimit: 50,
  metadata: { team: 'billing' },
  createdAt: EXAMPLE_TIME,
  updatedAt: EXAMPLE_TIME,
};
export const EndpointOut = Type.Object(endpointFields, { examples: [endpointExample] });

export function endpointOut(e: EndpointRow) {
  const types = JSON.parse(e.event_types) as string[];
  return {
    id: e.id,
    uid: e.uid,
    url: e.url,
    version: 1,
    description: e.description,
    disabled: e.status === 'disabled',
    filterTypes: types.length === 0 ? null : types,
    channels: e.channels === null ? null : (JSON.parse(e.channels) as string[]),
    filter: e.filter === null ? null : (JSON.parse(e.filter) as Record<string, unknown>),
    rateLimit: e.rate_limit,
    metadata: metadataOf(e.metadata),
    createdAt: iso(e.created_at),
    updatedAt: iso(e.updated_at),
  };
}

/** Svix's message states (MessageStatus): 0 success, 1 pending, 2 failed, 3 sending. */
const MESSAGE_STATUS = { success: 0, pending: 1, fail: 2, sending: 3 } as const;
type StatusText = keyof typeof MESSAGE_STATUS;

/** A delivery's state in Svix's words: `disabled` (its endpoint is) and `failed` are both `fail`. */
export function deliveryStatusText(status: DeliveryStatus): StatusText {
  return status === 'success' ? 'success' : status === 'pending' ? 'pending' : 'fail';
}
const statusFields = (text: StatusText) => ({ status: MESSAGE_STATUS[text], statusText: text });

const messageFields = {
  id: Type.String(),
  eventId: Nullable(Type.String()),
  eventType: Type.String(),
  payload: Type.Any(),
  channels: Nullable(Type.Array(Type.String())),
  tags: Nullable(Type.Array(Type.String())),
  deliverAt: Type.Optional(Nullable(Time)),
  timestamp: Time,
};
const messageExample = {
  id: EXAMPLE_MESSAGE,
  eventId: 'evt-invoice-1001',
  eventType: 'invoice.paid',
  payload: { invoice_id: 'inv_1001', amount: 4200, currency: 'usd' },
  channels: null,
  tags: ['region-eu'],
  timestamp: EXAMPLE_TIME,
};
export const MessageOut = Type.Object(messageFields, { examples: [messageExample] });

/**
 * A message; `payload` is its readable payload (JSON text: Messages.readablePayload), {} once it is not
 * (expunged, purged or past its own expiry) or when content is not asked for (Svix's `with_content=false`).
 */
export function messageOut(m: MessageRow, payloadJson: string | undefined) {
  return {
    id: m.id,
    eventId: m.event_id,
    eventType: m.event_type,
    payload: payloadJson === undefined ? {} : (JSON.parse(payloadJson) as unknown),
    channels: m.channels === null ? null : (JSON.parse(m.channels) as string[]),
    tags: m.tags === null ? null : (JSON.parse(m.tags) as string[]),
    deliverAt: m.deliver_at === null ? null : iso(m.deliver_at),
    timestamp: iso(m.created_at),
  };
}

const Status = Type.Integer({ minimum: 0, maximum: 3, description: '0 success, 1 pending, 2 failed, 3 sending' });
const StatusText = Type.Union([
  Type.Literal('success'),
  Type.Literal('pending'),
  Type.Literal('fail'),
  Type.Literal('sending'),
]);

export const EndpointMessageOut = Type.Object(
  {
    ...messageFields,
    status: Status,
    statusText: StatusText,
    nextAttempt: Nullable(Time),
  },
  { examples: [{ ...messageExample, status: 0, statusText: 'success', nextAttempt: null }] },
);

/** A message as one endpoint's delivery of it stands. */
export const endpointMessageOut = (m: MessageRow, d: DeliveryRead, payloadJson: string | undefined) => ({
  ...messageOut(m, payloadJson),
  ...statusFields(deliveryStatusText(d.status)),
  nextAttempt: d.next_attempt_at === null ? null : iso(d.next_attempt_at),
});

export const MessageEndpointOut = Type.Object(
  {
    ...endpointFields,
    status: Status,
    statusText: StatusText,
    nextAttempt: Nullable(Time),
  },
  { examples: [{ ...endpointExample, status: 2, statusText: 'fail', nextAttempt: '2026-01-01T00:05:00.000Z' }] },
);

/** An endpoint as one message's delivery to it stands. */
export const messageEndpointOut = (e: EndpointRow, d: DeliveryRead) => ({
  ...endpointOut(e),
  ...statusFields(deliveryStatusText(d.status)),
  nextAttempt: d.next_attempt_at === null ? null : iso(d.next_attempt_at),
});

export const MessageAttemptOut = Type.Object(
  {
    id: Type.String(),
    msgId: Type.String(),
    endpointId: Type.String(),
    url: Type.String(),
    response: Type.String(),
    responseStatusCode: Type.Integer(),
    responseDurationMs: Type.Integer(),
    status: Status,
    statusText: StatusText,
    triggerType: Type.Integer({ minimum: 0, maximum: 1, description: '0 scheduled, 1 manual' }),
    timestamp: Time,
    msg: Type.Optional(Nullable(MessageOut)),
  },
  {
    examples: [
      {
        id: 'atmpt_01jd5x3k8m2n4p6q8r0s2t4v6w',
        msgId: EXAMPLE_MESSAGE,
        endpointId: EXAMPLE_ENDPOINT,
        url: 'https://acme.example/webhooks',
        response: '{"received":true}',
        responseStatusCode: 200,
        responseDurationMs: 42,
        status: 0,
        statusText: 'success',
        triggerType: 0,
        timestamp: EXAMPLE_TIME,
      },
    ],
  },
);

/**
 * An attempt; `response` holds the receiver's stored answer only when `withResponse` (a single attempt's
 * read): lists leave it empty, so a page of attempts never reads a page of response bodies. An attempt
 * that got no answer has status code 0.
 */
export function messageAttemptOut(a: AttemptRead, withResponse: boolean) {
  // A cancelled attempt ended its delivery as delivered, which Svix's statuses call success.
  const text: StatusText = a.status === 'failed' ? 'fail' : 'success';
  return {
    id: a.id,
    msgId: a.message_id,
    endpointId: a.endpoint_id,
    // Where the attempt went: its transformation's URL, else the endpoint's.
    url: madeRequest(a)?.url ?? a.url ?? '',
    response: withResponse ? (a.response_body ?? a.error ?? '') : '',
    responseStatusCode: a.response_status ?? 0,
    responseDurationMs: a.duration_ms,
    ...statusFields(text),
    triggerType: a.trigger === 'manual' ? 1 : 0,
    timestamp: iso(a.created_at),
  };
}

export const EventTypeOut = Type.Object(
  {
    name: Type.String(),
    description: Type.String(),
    archived: Type.Boolean(),
    deprecated: Type.Boolean(),
    schemas: Nullable(Type.Record(Type.String(), Type.Any())),
    groupName: Nullable(Type.String()),
    featureFlags: Nullable(Type.Array(Type.String())),
    createdAt: Time,
    updatedAt: Time,
  },
  {
    examples: [
      {
        name: 'invoice.paid',
        description: 'An invoice was paid in full.',
        archived: false,
        deprecated: false,
        schemas: {
          '1': {
            type: 'object',
            properties: { invoice_id: { type: 'string' }, amount: { type: 'integer' } },
            required: ['invoice_id'],
          },
        },
        groupName: 'billing',
        featureFlags: null,
        createdAt: EXAMPLE_TIME,
        updatedAt: EXAMPLE_TIME,
      },
    ],
  },
);

/** An event type; its one JSON Schema is Svix's version "1". */
export const eventTypeOut = (e: EventTypeRow) => ({
  name: e.name,
  description: e.description,
  archived: e.archived === 1,
  deprecated: e.deprecated === 1,
  schemas: e.schema_json === null ? null : { '1': JSON.parse(e.schema_json) as unknown },
  groupName: e.group_name,
  featureFlags: null,
  createdAt: iso(e.created_at),
  updatedAt: iso(e.updated_at),
});

export const BackgroundTaskOut = Type.Object(
  {
    id: Type.String(),
    status: Type.Union([Type.Literal('running'), Type.Literal('finished'), Type.Literal('failed')]),
    task: Type.String(),
    data: Type.Record(Type.String(), Type.Any()),
    updatedAt: Time,
  },
  {
    examples: [
      {
        id: 'task_01jd5x3k8m2n4p6q8r0s2t4v6w',
        status: 'finished',
        task: 'endpoint.recover',
        data: { messagesQueued: 12 },
        updatedAt: EXAMPLE_TIME,
      },
    ],
  },
);

/** A task kind by Svix's name for it (Svix spells a bulk replay with a hyphen). */
export const svixTaskName = (kind: BackgroundTaskKind): string =>
  kind === 'endpoint.bulk_replay' ? 'endpoint.bulk-replay' : kind;

/**
 * A background task as Svix shows it. Svix has no `cancelled` status: a cancelled task shows as `failed`
 * with `data.cancelled` true.
 */
export const backgroundTaskOut = (b: BackgroundTaskRow) => ({
  id: b.id,
  status: b.status === 'cancelled' ? ('failed' as const) : b.status,
  task: svixTaskName(b.kind),
  data: {
    messagesQueued: b.enqueued,
    ...(b.total === null ? {} : { total: b.total }),
    ...(b.status === 'cancelled' ? { cancelled: true } : {}),
  },
  updatedAt: iso(b.updated_at),
});
