import { Type } from 'typebox';
import { EXAMPLE_TIME, Nullable, Timestamp } from './common.js';

// An entry of the event catalog.

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
