import { Type } from 'typebox';
import { EXAMPLE_ID, EXAMPLE_TIME, EXAMPLE_TRACE_ID, Nullable, Timestamp } from './common.js';

// A message as emits answer it and reads show it (metadata only), and its payload, read on demand.

const messageExample = {
  id: EXAMPLE_ID.message,
  object: 'message',
  event_type: 'invoice.paid',
  app_id: EXAMPLE_ID.app,
  channels: [],
  tags: ['region-eu'],
  trace_id: EXAMPLE_TRACE_ID,
  deliver_at: null,
  created_at: EXAMPLE_TIME,
};
/** A message's W3C trace id (src/domain/trace-context.ts): every attempt's traceparent carries it. */
export const TraceId = Type.String({
  pattern: '^[0-9a-f]{32}$',
  description:
    "The W3C trace id every attempt's `traceparent` carries: the emit's own trace, or one derived from the message id",
});

/** A message's fields as emits answer it and reads show it. */
const messageFields = {
  id: Type.String({ description: 'evt_…' }),
  object: Type.Literal('message'),
  event_type: Type.String(),
  app_id: Type.String(),
  channels: Type.Array(Type.String(), { description: 'Routing channels (empty: none)' }),
  tags: Type.Array(Type.String(), { description: 'Labels, for lists (tag=)' }),
  trace_id: TraceId,
  deliver_at: Nullable(
    Type.String({
      format: 'date-time',
      description: "When its deliveries' first attempts are due, as the emit asked; null: sent at once",
    }),
  ),
  created_at: Timestamp,
};

export const Message = Type.Object(messageFields, { examples: [messageExample] });

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
    ...messageFields,
    delivery_ids: Type.Array(Type.String()),
    idempotent: Type.Boolean(),
  },
  { examples: [{ ...messageExample, delivery_ids: [EXAMPLE_ID.delivery], idempotent: false }] },
);
